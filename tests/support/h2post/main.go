// Command h2post POSTs a file as an AdmissionReview the way the apiserver's webhook client does
// (Go's net/http over TLS, HTTP/2 by ALPN) and prints what came back: the status code and
// protocol on the first line, then the body. A transport error (a reset stream) is printed as
// "error: ..." with exit status 1.
//
// Usage: h2post CA_FILE URL BODY_FILE
package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: h2post CA_FILE URL BODY_FILE")
		os.Exit(2)
	}
	ca, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	body, err := os.ReadFile(os.Args[3])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca) {
		fmt.Fprintln(os.Stderr, "no certificate in", os.Args[1])
		os.Exit(2)
	}
	transport := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, ForceAttemptHTTP2: true}
	response, err := (&http.Client{Transport: transport}).Post(os.Args[2], "application/json", bytes.NewReader(body))
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	defer response.Body.Close()
	answer, err := io.ReadAll(response.Body)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Printf("%d %s\n%s\n", response.StatusCode, response.Proto, answer)
}
