// Command udpname is a UDP server and client for the e2e tests, which
// busybox lacks: `udpname -listen :8081` answers every datagram with the
// host's name (a pod's name, in a pod); `udpname -dial ip:port` sends
// one datagram and prints the answer, or fails after 2 seconds.
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"time"
)

func main() {
	listen := flag.String("listen", "", "serve on this UDP address")
	dial := flag.String("dial", "", "ask this UDP address")
	flag.Parse()
	switch {
	case *listen != "":
		if err := serve(*listen); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	case *dial != "":
		answer, err := ask(*dial)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(answer)
	default:
		flag.Usage()
		os.Exit(2)
	}
}

func serve(addr string) error {
	name, err := os.Hostname()
	if err != nil {
		return err
	}
	conn, err := net.ListenPacket("udp4", addr)
	if err != nil {
		return err
	}
	buf := make([]byte, 1500)
	for {
		_, from, err := conn.ReadFrom(buf)
		if err != nil {
			return err
		}
		_, _ = conn.WriteTo([]byte(name), from)
	}
}

func ask(addr string) (string, error) {
	conn, err := net.Dial("udp4", addr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Write([]byte("hostName\n")); err != nil {
		return "", err
	}
	buf := make([]byte, 1500)
	n, err := conn.Read(buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}
