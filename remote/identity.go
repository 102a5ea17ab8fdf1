package remote

import (
	"crypto/tls"
	"errors"
	"fmt"
	"strings"

	"github.com/mailroom-go/mailroom/internal/wire"
)

// Names and credentials. Without TLS a node name is a claim: any holder
// of the cookie can claim any name (doc.go says so). With TLS the name in
// a hello must be the name in the peer's certificate, checked on both
// sides before the link is up: by default a DNS SAN equal to the node
// name, or a URI SAN whose text is the node name; Config.VerifyPeer
// replaces that check for other schemes.

// verifyIdentity checks that the TLS peer of st may call itself node:
// verify (Config.VerifyPeer) says, or by default certNamesNode. Without
// TLS (st nil) there is nothing to check.
func verifyIdentity(verify func(node string, st tls.ConnectionState) error, node string, st *tls.ConnectionState) *wire.Refusal {
	if st == nil {
		return nil
	}
	var err error
	if verify != nil {
		err = verify(node, *st)
	} else {
		err = certNamesNode(node, st)
	}
	if err != nil {
		return wire.Refuse(wire.CodeIdentity, "identity: %v", err)
	}
	return nil
}

// certNamesNode is the default VerifyPeer: the peer's verified leaf
// certificate has a DNS SAN equal to node, or a URI SAN equal to it.
func certNamesNode(node string, st *tls.ConnectionState) error {
	if len(st.PeerCertificates) == 0 {
		return errors.New("the peer presented no certificate")
	}
	if len(st.VerifiedChains) == 0 {
		return errors.New("the peer's certificate was not verified (a TLS server needs ClientAuth tls.RequireAndVerifyClientCert)")
	}
	leaf := st.PeerCertificates[0]
	var names []string
	for _, dns := range leaf.DNSNames {
		if dns == node {
			return nil
		}
		names = append(names, "DNS:"+dns)
	}
	for _, u := range leaf.URIs {
		if u.String() == node {
			return nil
		}
		names = append(names, "URI:"+u.String())
	}
	if len(names) == 0 {
		names = append(names, "no DNS or URI name")
	}
	return fmt.Errorf("the certificate of %q names %s, not node %q", leaf.Subject.String(), strings.Join(names, ", "), node)
}
