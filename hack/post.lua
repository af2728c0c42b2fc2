-- wrk script: POST a JSON body, as the README's load example does:
--   wrk -c 20 -d 30s -s hack/post.lua http://127.0.0.1:10080/function/default/greet
wrk.method = "POST"
wrk.body = '{"name":"wrk"}'
wrk.headers["Content-Type"] = "application/json"
