// Command fakeopenai serves the fake OpenAI-compatible endpoint of package fakeopenai on a local port, so a sweep
// can run the openai provider end to end without a real model:
//
//	go run ./testkit/fakeopenai/cmd/fakeopenai -addr 127.0.0.1:8089 &
//	OPENAI_BASE_URL=http://127.0.0.1:8089/v1 go run ./starter run specs/demo.jsonnet --ext-str model=openai
//
// Its answers are deterministic and derived from the prompt (see fakeopenai.DefaultAnswer); it is not a model.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"

	"ctxlab/testkit/fakeopenai"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8089", "address to listen on")
	rateLimited := flag.Int("rate-limit-first", 0, "answer the first N chat calls with 429 and Retry-After")
	flag.Parse()
	s := fakeopenai.New(fakeopenai.WithFailures(*rateLimited, fakeopenai.RateLimit))
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("fake OpenAI-compatible endpoint (not a model): OPENAI_BASE_URL=http://%s/v1\n", ln.Addr())
	log.Fatal(http.Serve(ln, s))
}
