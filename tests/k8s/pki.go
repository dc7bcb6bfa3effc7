package main

// The cluster's key material: one CA that signs the API server's serving certificate and the
// admin's client certificate and that the API server trusts for client certificates, plus the
// ServiceAccount token signing key. Everything is written once into DATA/pki and reused on
// every later start, so clients, kubeconfigs and issued tokens stay valid across restarts.

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki holds the paths of the cluster's key material.
type pki struct {
	dir string
}

func (p pki) path(name string) string { return filepath.Join(p.dir, name) }

func (p pki) caCert() string      { return p.path("ca.crt") }
func (p pki) caKey() string       { return p.path("ca.key") }
func (p pki) servingCert() string { return p.path("apiserver.crt") }
func (p pki) servingKey() string  { return p.path("apiserver.key") }
func (p pki) adminCert() string   { return p.path("admin.crt") }
func (p pki) adminKey() string    { return p.path("admin.key") }
func (p pki) saKey() string       { return p.path("sa.key") }
func (p pki) saPub() string       { return p.path("sa.pub") }

// ensure creates whatever key material is missing and leaves existing files alone.
func (p pki) ensure() error {
	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", p.dir, err)
	}
	ca, caKey, err := p.loadOrCreateCA()
	if err != nil {
		return err
	}
	serving := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback, serviceIP},
	}
	if err := p.ensureLeaf(p.servingCert(), p.servingKey(), serving, ca, caKey); err != nil {
		return err
	}
	// system:masters is the group the bootstrap RBAC policy grants everything to.
	admin := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "spinel-admin", Organization: []string{"system:masters"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if err := p.ensureLeaf(p.adminCert(), p.adminKey(), admin, ca, caKey); err != nil {
		return err
	}
	return p.ensureServiceAccountKey()
}

func (p pki) loadOrCreateCA() (*x509.Certificate, crypto.Signer, error) {
	if exists(p.caCert()) && exists(p.caKey()) {
		cert, err := readCert(p.caCert())
		if err != nil {
			return nil, nil, err
		}
		key, err := readKey(p.caKey())
		if err != nil {
			return nil, nil, err
		}
		return cert, key, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate CA key: %w", err)
	}
	template := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "spinel-k8s-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, key.Public(), key)
	if err != nil {
		return nil, nil, fmt.Errorf("self-sign CA: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, err
	}
	// The key first: a certificate without its key would be reused but be useless.
	if err := writeKey(p.caKey(), key); err != nil {
		return nil, nil, err
	}
	if err := writePEM(p.caCert(), "CERTIFICATE", der, 0o644); err != nil {
		return nil, nil, err
	}
	return cert, key, nil
}

func (p pki) ensureLeaf(certPath, keyPath string, template *x509.Certificate, ca *x509.Certificate, caKey crypto.Signer) error {
	if exists(certPath) && exists(keyPath) {
		return nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("generate key for %s: %w", certPath, err)
	}
	template.SerialNumber = serial()
	template.NotBefore = time.Now().Add(-time.Hour)
	template.NotAfter = time.Now().AddDate(10, 0, 0)
	template.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, template, ca, key.Public(), caKey)
	if err != nil {
		return fmt.Errorf("sign %s: %w", certPath, err)
	}
	if err := writeKey(keyPath, key); err != nil {
		return err
	}
	return writePEM(certPath, "CERTIFICATE", der, 0o644)
}

func (p pki) ensureServiceAccountKey() error {
	if exists(p.saKey()) && exists(p.saPub()) {
		return nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("generate ServiceAccount signing key: %w", err)
	}
	pub, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return err
	}
	if err := writeKey(p.saKey(), key); err != nil {
		return err
	}
	return writePEM(p.saPub(), "PUBLIC KEY", pub, 0o644)
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return n
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func readCert(path string) (*x509.Certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("%s: no PEM certificate; delete the data dir to start afresh", path)
	}
	return x509.ParseCertificate(block.Bytes)
}

func readKey(path string) (crypto.Signer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "EC PRIVATE KEY" {
		return nil, fmt.Errorf("%s: no PEM EC private key; delete the data dir to start afresh", path)
	}
	return x509.ParseECPrivateKey(block.Bytes)
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return writePEM(path, "EC PRIVATE KEY", der, 0o600)
}

func writePEM(path, kind string, der []byte, mode os.FileMode) error {
	return writeAtomic(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), mode)
}

// writeAtomic writes a file so that a crash leaves either the old or the new content.
func writeAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr, os.Chmod(tmp.Name(), mode)); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
