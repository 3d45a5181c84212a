package testredis

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// ErrNoTLS means the redis-server on PATH was built without TLS support.
var ErrNoTLS = errors.New("redis-server was built without TLS support (Debian's redis-server has it; or build Redis with BUILD_TLS=yes)")

// Certs are PEM files: a CA made for one test, and a server certificate
// and key it signed.
type Certs struct {
	CAFile, CertFile, KeyFile string
	Hosts                     []string // the names the server certificate is valid for
}

// MakeCerts writes a fresh CA and a server certificate signed by it, valid
// for hosts (IP addresses or DNS names), into dir.
func MakeCerts(dir string, hosts ...string) (Certs, error) {
	if len(hosts) == 0 {
		return Certs{}, errors.New("make test certificates: name at least one host")
	}
	c := Certs{CAFile: filepath.Join(dir, "ca.pem"), CertFile: filepath.Join(dir, "server.pem"), KeyFile: filepath.Join(dir, "server-key.pem"), Hosts: hosts}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Certs{}, err
	}
	now := time.Now()
	ca := &x509.Certificate{SerialNumber: serial(), Subject: pkix.Name{CommonName: "kairos test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return Certs{}, err
	}
	if ca, err = x509.ParseCertificate(caDER); err != nil {
		return Certs{}, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Certs{}, err
	}
	leaf := &x509.Certificate{SerialNumber: serial(), Subject: pkix.Name{CommonName: hosts[0]},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			leaf.IPAddresses = append(leaf.IPAddresses, ip)
		} else {
			leaf.DNSNames = append(leaf.DNSNames, h)
		}
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		return Certs{}, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return Certs{}, err
	}
	for _, f := range []struct {
		path, typ string
		der       []byte
	}{{c.CAFile, "CERTIFICATE", caDER}, {c.CertFile, "CERTIFICATE", leafDER}, {c.KeyFile, "PRIVATE KEY", keyDER}} {
		if err := os.WriteFile(f.path, pem.EncodeToMemory(&pem.Block{Type: f.typ, Bytes: f.der}), 0o600); err != nil {
			return Certs{}, err
		}
	}
	return c, nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	return n
}

// ClientTLS returns a client configuration that trusts the CA of c and
// expects the server's first host name.
func (c Certs) ClientTLS() (*tls.Config, error) {
	pem, err := os.ReadFile(c.CAFile)
	if err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("no certificate in %s", c.CAFile)
	}
	return &tls.Config{RootCAs: roots, ServerName: c.Hosts[0], MinVersion: tls.VersionTLS12}, nil
}

// Args returns redis-server's arguments for serving TLS only on port with
// these certificates (clients need no certificate of their own).
func (c Certs) Args(port string) []string {
	return []string{"--port", "0", "--tls-port", port, "--tls-cert-file", c.CertFile, "--tls-key-file", c.KeyFile,
		"--tls-ca-cert-file", c.CAFile, "--tls-auth-clients", "no"}
}

// StartTLS runs a fresh redis-server in dir that speaks only TLS, on a
// free loopback port, with a certificate for hosts (default 127.0.0.1 and
// localhost) signed by a CA made for it; Server.CAFile names that CA. A
// redis-server without TLS support gives an error wrapping ErrNoTLS.
func StartTLS(dir string, hosts []string, extra ...string) (*Server, error) {
	if len(hosts) == 0 {
		hosts = []string{"127.0.0.1", "localhost"}
	}
	certs, err := MakeCerts(dir, hosts...)
	if err != nil {
		return nil, fmt.Errorf("make test certificates: %w", err)
	}
	return startTLS(dir, certs, extra...)
}

func startTLS(dir string, certs Certs, extra ...string) (*Server, error) {
	cfg, err := certs.ClientTLS()
	if err != nil {
		return nil, err
	}
	s, err := startOn(dir, cfg, func(port string) []string { return append(certs.Args(port), extra...) })
	if err != nil {
		if refusedTLS(err.Error()) {
			return nil, fmt.Errorf("%w: %v", ErrNoTLS, err)
		}
		return nil, err
	}
	s.CAFile = certs.CAFile
	return s, nil
}

// refusedTLS reports whether what redis-server said at start means it
// does not know TLS.
func refusedTLS(said string) bool {
	said = strings.ToLower(said)
	return strings.Contains(said, "'tls-") && strings.Contains(said, "bad directive") ||
		strings.Contains(said, "tls") && (strings.Contains(said, "not supported") || strings.Contains(said, "not available"))
}

// NewTLS is StartTLS for one test, stopped at cleanup. A redis-server
// without TLS support skips the test, except in CI (CI=true), where it
// fails it: CI must run the TLS tests.
func NewTLS(tb testing.TB, hosts ...string) *Server {
	tb.Helper()
	s, err := StartTLS(tb.TempDir(), hosts)
	if errors.Is(err, ErrNoTLS) && os.Getenv("CI") != "true" {
		tb.Skip(err)
	}
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Stop)
	return s
}
