"""The per-run certificate authority: how the proxy reads HTTPS to a host a secret is bound to, to swap it in.

Made at the run's start, in memory (the `cryptography` library): its key and every leaf key stay in this
process and are never written to a file system (a leaf is handed to OpenSSL through a memfd, which no other
process can name). The sandbox trusts the CA through the usual variables and a bundle of the host's CAs plus
this one (`trust_bundle`); the CA may sign only for the bound hosts (name constraints), so a leaked
certificate could vouch for nothing else, and it expires a day after the run starts. Every other host stays an
opaque tunnel: the proxy terminates TLS for the bound hosts alone.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import ssl
import threading

from agentbox.egress import hostnames
from agentbox.egress.policy import AllowEntry

__all__ = ["Authority", "host_bundle"]

_LIFETIME = datetime.timedelta(days=1)


class Authority:
    """A run's CA, constrained to `entries` (the bound hosts, allow_domains syntax, parsed)."""

    def __init__(self, entries: tuple[AllowEntry, ...], name: str = "Agent-Box run CA"):
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID

        self._x509, self._hashes, self._ec = x509, hashes, ec
        self._key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.timezone.utc)
        self._valid = (now - datetime.timedelta(minutes=5), now + _LIFETIME)
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{name} {os.urandom(4).hex()}")])
        permitted = [_constraint(x509, e) for e in entries] or [x509.DNSName("invalid")]
        self.cert = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(self._valid[0])
            .not_valid_after(self._valid[1])
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=False,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(x509.NameConstraints(permitted_subtrees=permitted, excluded_subtrees=None), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(self._key.public_key()), critical=False)
            .sign(self._key, hashes.SHA256())
        )
        self._contexts: dict[str, ssl.SSLContext] = {}
        self._lock = threading.Lock()

    def cert_pem(self) -> bytes:
        from cryptography.hazmat.primitives.serialization import Encoding

        return self.cert.public_bytes(Encoding.PEM)

    def server_context(self, host: str) -> ssl.SSLContext:
        """A TLS server context presenting a certificate for `host` (made once per host), refusing a ClientHello
        whose SNI names another host."""
        with self._lock:
            if host not in self._contexts:
                self._contexts[host] = self._context(host)
            return self._contexts[host]

    def leaf(self, host: str) -> tuple[bytes, bytes]:
        """(certificate PEM, key PEM) for `host`, signed by this CA."""
        x509, ec = self._x509, self._ec
        from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat
        from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

        key = ec.generate_private_key(ec.SECP256R1())
        alt = x509.IPAddress(ipaddress.ip_address(host)) if hostnames.kind(host) == "ip" else x509.DNSName(host)
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host[:64])]))
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(self._valid[0])
            .not_valid_after(self._valid[1])
            .add_extension(x509.SubjectAlternativeName([alt]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key()), critical=False)
            .sign(self._key, self._hashes.SHA256())
        )
        return (cert.public_bytes(Encoding.PEM), key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()))

    def _context(self, host: str) -> ssl.SSLContext:
        cert, key = self.leaf(host)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.set_alpn_protocols(["http/1.1"])  # the proxy reads HTTP/1.1 only
        fd = os.memfd_create("agentbox-leaf", os.MFD_CLOEXEC)
        try:
            os.write(fd, cert + key + self.cert_pem())
            context.load_cert_chain(f"/proc/self/fd/{fd}")
        finally:
            os.close(fd)

        def sni(ssl_object, name, _context) -> int | None:
            try:
                same = name is None or hostnames.normalize(name) == host
            except ValueError:
                same = False
            return None if same else ssl.ALERT_DESCRIPTION_UNRECOGNIZED_NAME

        context.sni_callback = sni
        return context


def _constraint(x509, entry: AllowEntry):
    if hostnames.kind(entry.host) == "ip":
        address = ipaddress.ip_address(entry.host)
        return x509.IPAddress(ipaddress.ip_network(f"{address}/{address.max_prefixlen}"))
    return x509.DNSName(entry.host)  # a DNS constraint permits the name and every name below it


def host_bundle() -> bytes:
    """The host's own CA bundle (OpenSSL's default file, as SSL_CERT_FILE may name it), or b"" when it has none."""
    paths = ssl.get_default_verify_paths()
    for path in (paths.cafile, paths.openssl_cafile):
        if path and os.path.isfile(path):
            with open(path, "rb") as f:
                return f.read()
    return b""
