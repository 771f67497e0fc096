// An in-memory S3-compatible server for the shared-history tests (gofakes3): buckets are
// created on first use. `fakes3 127.0.0.1:0` prints "listening on HOST:PORT" and serves
// until killed.
package main

import (
	"fmt"
	"net"
	"net/http"
	"os"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: fakes3 HOST:PORT")
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	faker := gofakes3.New(s3mem.New(), gofakes3.WithAutoBucket(true))
	fmt.Println("listening on", ln.Addr())
	if err := http.Serve(ln, faker.Server()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
