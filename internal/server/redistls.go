package server

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
)

// redisCA reads the CA certificates of KAIROS_REDIS_CA; nil when it is
// unset, so a rediss:// URL verifies against the system's roots.
func redisCA(cfg Config) (*x509.CertPool, error) {
	if cfg.RedisCA == "" {
		return nil, nil
	}
	b, err := os.ReadFile(cfg.RedisCA)
	if err != nil {
		return nil, fmt.Errorf("KAIROS_REDIS_CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("KAIROS_REDIS_CA (%s): no PEM certificate in the file (want -----BEGIN CERTIFICATE-----)", cfg.RedisCA)
	}
	return pool, nil
}

// trustCA makes a rediss:// URL's TLS settings verify the server against
// roots (when set) instead of the system's.
func trustCA(c *tls.Config, roots *x509.CertPool) {
	if c != nil && roots != nil {
		c.RootCAs = roots
	}
}

// explainTLS says what was wrong when err is the server's certificate
// failing verification, or the server not speaking TLS at all, and what
// to check; nil for any other error, which may pass as Redis comes up.
// Nothing it says comes from the URL's user or password.
func explainTLS(err error, cfg Config) error {
	host := "the URL's host"
	if u, perr := url.Parse(cfg.RedisURL); perr == nil && u.Host != "" {
		host = u.Host
	}
	var (
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		verify   *tls.CertificateVerificationError
		record   tls.RecordHeaderError
	)
	switch {
	case errors.As(err, &unknown) && cfg.RedisCA != "":
		return fmt.Errorf("TLS to Redis: the server's certificate is not signed by the CA in KAIROS_REDIS_CA (%s): %w; check KAIROS_REDIS_CA or the URL's host (%s)", cfg.RedisCA, err, host)
	case errors.As(err, &unknown):
		return fmt.Errorf("TLS to Redis: the server's certificate is not signed by a CA this system trusts: %w; set KAIROS_REDIS_CA to the PEM file of the CA that signed it", err)
	case errors.As(err, &hostname):
		return fmt.Errorf("TLS to Redis: the server's certificate is not valid for %q, the host in KAIROS_REDIS_URL: %w; use a host name the certificate names (%s)",
			hostname.Host, err, certNames(hostname.Certificate))
	case errors.As(err, &invalid):
		return fmt.Errorf("TLS to Redis: the server's certificate is not valid: %w; check its dates and this machine's clock", err)
	case errors.As(err, &verify):
		return fmt.Errorf("TLS to Redis: the server's certificate was refused: %w", err)
	case errors.As(err, &record):
		return fmt.Errorf("TLS to Redis: the server at %s does not speak TLS: %w; use redis:// for it, or its TLS port", host, err)
	}
	return nil
}

// certNames lists the host names and addresses a certificate is valid for.
func certNames(c *x509.Certificate) string {
	if c == nil {
		return "none"
	}
	names := slices.Clone(c.DNSNames)
	for _, ip := range c.IPAddresses {
		names = append(names, ip.String())
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
