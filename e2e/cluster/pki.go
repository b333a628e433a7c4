package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// pki is the test cluster's trust: one CA that signs the API server's serving certificate and
// the admin client certificate, and the key service account tokens are signed with.
type pki struct {
	dir                   string
	caCert, caKey         string
	serverCert, serverKey string
	adminCert, adminKey   string
	// nodeCert is kubelet's client identity on nodeName: the API server's Node authorizer and
	// NodeRestriction admission hold it to what that node's pods need.
	nodeCert, nodeKey string
	saKey, saPub      string
	caPEM             []byte
}

// newPKI writes fresh keys and certificates into dir; nothing is reused between runs. The API
// server's certificate names the loopback address, the first address of the service range and
// host, the address it listens on.
func newPKI(dir, host string) (*pki, error) {
	p := &pki{dir: dir}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("CA key: %w", err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "csikit-e2e-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	p.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	if p.caCert, p.caKey, err = p.write("ca", caDER, caKey); err != nil {
		return nil, err
	}
	leaf := func(name string, serial int64, tmpl *x509.Certificate) (string, string, error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return "", "", fmt.Errorf("%s key: %w", name, err)
		}
		tmpl.SerialNumber = big.NewInt(serial)
		tmpl.NotBefore, tmpl.NotAfter = now.Add(-time.Hour), now.Add(24*time.Hour)
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return "", "", fmt.Errorf("%s certificate: %w", name, err)
		}
		return p.write(name, der, key)
	}
	if p.serverCert, p.serverKey, err = leaf("apiserver", 2, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv4(10, 0, 0, 1), net.ParseIP(host)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}); err != nil {
		return nil, err
	}
	// system:masters bypasses authorization: the control plane's own components and the test
	// itself use it, the driver's sidecars never do (they get service account tokens).
	if p.adminCert, p.adminKey, err = leaf("admin", 3, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "csikit-e2e-admin", Organization: []string{"system:masters"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}); err != nil {
		return nil, err
	}
	if p.nodeCert, p.nodeKey, err = leaf("node", 4, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "system:node:" + nodeName, Organization: []string{"system:nodes"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}); err != nil {
		return nil, err
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("service account key: %w", err)
	}
	p.saKey = filepath.Join(dir, "sa.key")
	p.saPub = filepath.Join(dir, "sa.pub")
	pub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("service account key: %w", err)
	}
	if err := os.WriteFile(p.saKey, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(saKey)}), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(p.saPub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *pki) write(name string, der []byte, key *ecdsa.PrivateKey) (certPath, keyPath string, err error) {
	kd, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return "", "", fmt.Errorf("%s key: %w", name, err)
	}
	certPath, keyPath = filepath.Join(p.dir, name+".crt"), filepath.Join(p.dir, name+".key")
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd}), 0o600); err != nil {
		return "", "", err
	}
	return certPath, keyPath, nil
}

// adminConfig is the REST configuration of the admin identity.
func (p *pki) adminConfig(server string) *rest.Config {
	return &rest.Config{Host: server, TLSClientConfig: rest.TLSClientConfig{CAFile: p.caCert, CertFile: p.adminCert, KeyFile: p.adminKey}}
}

// writeKubeconfig writes a kubeconfig for server with either the admin certificate or a bearer
// token, for the components that take only a file.
func (p *pki) writeKubeconfig(path, server, token string) error {
	auth := &clientcmdapi.AuthInfo{Token: token}
	if token == "" {
		auth = &clientcmdapi.AuthInfo{ClientCertificate: p.adminCert, ClientKey: p.adminKey}
	}
	return p.writeKubeconfigAuth(path, server, auth)
}

// writeKubeconfigNode writes a kubeconfig with kubelet's node identity.
func (p *pki) writeKubeconfigNode(path, server string) error {
	return p.writeKubeconfigAuth(path, server, &clientcmdapi.AuthInfo{ClientCertificate: p.nodeCert, ClientKey: p.nodeKey})
}

func (p *pki) writeKubeconfigAuth(path, server string, auth *clientcmdapi.AuthInfo) error {
	cfg := clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"e2e": {Server: server, CertificateAuthority: p.caCert}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"e2e": auth},
		Contexts:       map[string]*clientcmdapi.Context{"e2e": {Cluster: "e2e", AuthInfo: "e2e"}},
		CurrentContext: "e2e",
	}
	if err := clientcmd.WriteToFile(cfg, path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return nil
}
