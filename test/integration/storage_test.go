package integration

import (
	"bytes"
	"encoding/json"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
)

type secretsClient = typedcorev1.SecretInterface

// rawEtcdValue reads a key straight from etcd, past the apiserver.
func rawEtcdValue(t *testing.T, c *cluster, key string) []byte {
	t.Helper()
	resp, err := etcdClient(t, c).Get(ctxT(t), key)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 {
		t.Fatalf("etcd key %s: %d values", key, len(resp.Kvs))
	}
	return resp.Kvs[0].Value
}

func TestSecretsEncryptedAtRest(t *testing.T) {
	c := startCluster(t)
	ctx := ctxT(t)
	const plaintext = "s3cr3t-PLAINTEXT-marker-4711"
	const cmValue = "configmap-PLAINTEXT-marker-0815"
	secrets := func() secretsClient { return c.client.CoreV1().Secrets("default") }
	sec, err := secrets().Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Labels: map[string]string{"app": "db"}},
		Data:       map[string][]byte{"password": []byte(plaintext)},
		StringData: map[string]string{"token": plaintext + "-token"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "plain"}, Data: map[string]string{"k": cmValue},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	checkEncrypted := func(stage string) {
		t.Helper()
		raw := rawEtcdValue(t, c, "/registry/secrets/default/db")
		if !bytes.HasPrefix(raw, []byte("k8s:enc:aesgcm:v1:")) {
			t.Fatalf("%s: stored Secret does not start with k8s:enc:aesgcm:v1: %q", stage, raw[:min(len(raw), 40)])
		}
		for _, leak := range []string{plaintext, "password", `"db"`, "Secret"} {
			if bytes.Contains(raw, []byte(leak)) {
				t.Fatalf("%s: stored Secret contains %q in the clear", stage, leak)
			}
		}
		raw = rawEtcdValue(t, c, "/registry/configmaps/default/plain")
		var cm corev1.ConfigMap
		if err := json.Unmarshal(raw, &cm); err != nil || cm.Data["k"] != cmValue || cm.Name != "plain" || cm.UID == "" {
			t.Fatalf("%s: stored ConfigMap is not plain JSON: %v %q", stage, err, raw)
		}
		if cm.ResourceVersion != "" {
			t.Fatalf("%s: resourceVersion %q stored in the value; it is the key's revision", stage, cm.ResourceVersion)
		}
	}
	checkRead := func(stage string) {
		t.Helper()
		got, err := secrets().Get(ctx, "db", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s: %v", stage, err)
		}
		if string(got.Data["password"]) != plaintext || string(got.Data["token"]) != plaintext+"-token" || got.UID != sec.UID {
			t.Fatalf("%s: Secret read back as %+v", stage, got)
		}
		list, err := secrets().List(ctx, metav1.ListOptions{LabelSelector: "app=db"})
		if err != nil || len(list.Items) != 1 || string(list.Items[0].Data["password"]) != plaintext {
			t.Fatalf("%s: list: %v %+v", stage, err, list)
		}
	}
	checkEncrypted("after create")
	checkRead("after create")
	if sec.StringData != nil {
		t.Fatalf("stringData was stored: %v", sec.StringData)
	}

	// Updates are encrypted too, with a fresh nonce.
	before := rawEtcdValue(t, c, "/registry/secrets/default/db")
	if _, err := secrets().Patch(ctx, "db", types.MergePatchType, []byte(`{"metadata":{"labels":{"v":"2"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if after := rawEtcdValue(t, c, "/registry/secrets/default/db"); bytes.Equal(before, after) || bytes.Equal(before[:40], after[:40]) {
		t.Fatal("the update's ciphertext repeats the create's nonce")
	}
	checkEncrypted("after update")

	// A ciphertext moved to another key does not decrypt there: the key is
	// bound in as additional data.
	cli := etcdClient(t, c)
	if _, err := cli.Put(ctx, "/registry/secrets/default/copy", string(rawEtcdValue(t, c, "/registry/secrets/default/db"))); err != nil {
		t.Fatal(err)
	}
	if _, err := secrets().Get(ctx, "copy", metav1.GetOptions{}); !apierrors.IsInternalError(err) {
		t.Fatalf("a Secret copied to another etcd key: %v, want an internal error", err)
	}
	if _, err := cli.Delete(ctx, "/registry/secrets/default/copy", clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}

	c.restart()
	ctx = ctxT(t)
	checkRead("after restart")
	checkEncrypted("after restart")
}
