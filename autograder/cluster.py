"""The course's Dask cluster, reached over Dask's own TLS with mutual authentication.

    python -m autograder.cluster certs [--out DIR]       (make cluster-certs)

Every connection of the cluster (the instructor's grader, the scheduler, the workers) is TLS, and
each end must show a certificate signed by the course's own certificate authority, which
``make cluster-certs`` makes (``autograder/work/cluster/``, out of git; its key never leaves the
instructor's machine). A machine without such a certificate cannot connect, so it can neither run a
function on a worker or the scheduler (``client.run``, ``run_on_scheduler``) nor submit or read a
task; what travels (submissions, results) is encrypted. The grader reaches a cluster only through
:func:`client`, which refuses any address that is not ``tls://``: a plain ``tcp://`` scheduler, on
loopback too (on the hub's machine every student is a local user), lets anyone who reaches it run
code on the workers and rewrite grades.

What each machine needs (docs/teaching.md): the scheduler ``ca.pem``, ``scheduler.pem``,
``scheduler-key.pem``; each worker ``ca.pem``, ``worker.pem``, ``worker-key.pem``; the instructor's
grader ``ca.pem``, ``instructor.pem``, ``instructor-key.pem``. Dask accepts any certificate of the
course's authority in any role, so a worker's key is as good as the instructor's: keep it on the
grading machines only (autograder/README.md, threat table).
"""
from __future__ import annotations

import argparse
import datetime
import os
import sys
from pathlib import Path

from course.paths import ROOT

CERTS = ROOT / "autograder" / "work" / "cluster"
ROLES = ("scheduler", "worker", "instructor")        # one certificate each, all from the course's authority
VALID_DAYS = 400                                     # a term and then some; make new ones for the next
HOW = ("make the course's certificates (`make cluster-certs`), start the scheduler and the workers on tls:// "
       "with --tls-ca-file, --tls-cert and --tls-key (docs/teaching.md, \"Grading on many machines\"), then "
       "grade with SCHEDULER=tls://HOST:PORT")


def check_address(address: str) -> str:
    """The scheduler's address if it is ``tls://``; otherwise ValueError saying what to do."""
    scheme, sep, rest = address.partition("://")
    if not sep:
        scheme, rest = "tcp", address                 # Dask's default protocol
    if scheme != "tls" or not rest:
        raise ValueError(f"{address!r}: the grader reaches a Dask cluster over TLS only, never plain {scheme}:// "
                         "(on loopback too: on a shared machine any local user can reach it), since anyone who "
                         f"connects can run code on the workers and change grades. To grade on a cluster, {HOW}")
    return address


def security(folder: Path = CERTS, roles: tuple = ("client",)):
    """Dask's Security for these roles (``client``: the instructor's grader; ``scheduler``, ``worker``:
    a cluster started here, as tests and benchmarks do), encryption required, from the course's
    certificates in ``folder``."""
    from distributed.security import Security
    folder = Path(folder)
    files = {"client": "instructor", "scheduler": "scheduler", "worker": "worker"}
    wanted = [folder / "ca.pem"] + [folder / f"{files[r]}{end}" for r in roles for end in (".pem", "-key.pem")]
    missing = [p.name for p in wanted if not p.is_file()]
    if missing:
        raise ValueError(f"no course certificates in {folder} ({', '.join(missing)} missing): {HOW}")
    paths = {}
    for role in roles:
        paths[f"tls_{role}_cert"] = str(folder / f"{files[role]}.pem")
        paths[f"tls_{role}_key"] = str(folder / f"{files[role]}-key.pem")
    return Security(require_encryption=True, tls_ca_file=str(folder / "ca.pem"), **paths)


def client(address: str, folder: Path = CERTS, timeout: str = "30s"):
    """A Dask client of the cluster at ``address`` (tls:// only), as the instructor."""
    from distributed import Client
    return Client(check_address(address), security=security(folder), timeout=timeout)


def make_certs(folder: Path = CERTS) -> Path:
    """The course's certificate authority and one certificate per role, in ``folder`` (kept when
    already there: delete the folder for new ones). Keys are written readable by their owner only."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    folder = Path(folder)
    if all((folder / f"{name}{end}").is_file() for name in ("ca", *ROLES) for end in (".pem", "-key.pem")):
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    now = datetime.datetime.now(datetime.timezone.utc)

    def write(name: str, key, cert):
        data = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                 serialization.NoEncryption())
        fd = os.open(folder / f"{name}-key.pem", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        (folder / f"{name}.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))

    def certificate(subject: str, key, issuer, issuer_key, ca: bool):
        name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "rnnlm-course"),
                          x509.NameAttribute(NameOID.COMMON_NAME, subject)])
        builder = (x509.CertificateBuilder().subject_name(name).issuer_name(issuer or name)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
                   .add_extension(x509.BasicConstraints(ca=ca, path_length=0 if ca else None), critical=True)
                   .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
                   .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                       (issuer_key or key).public_key()), critical=False))
        if ca:
            builder = builder.add_extension(x509.KeyUsage(
                digital_signature=False, content_commitment=False, key_encipherment=False,
                data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
                encipher_only=False, decipher_only=False), critical=True)
        else:       # every member of a Dask cluster both listens and connects
            builder = (builder.add_extension(x509.SubjectAlternativeName([x509.DNSName(subject)]), critical=False)
                       .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                             ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False))
        return builder.sign(issuer_key or key, hashes.SHA256())

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = certificate("rnnlm-course cluster authority", ca_key, None, None, ca=True)
    write("ca", ca_key, ca_cert)
    for role in ROLES:
        key = ec.generate_private_key(ec.SECP256R1())
        write(role, key, certificate(f"rnnlm-course {role}", key, ca_cert.subject, ca_key, ca=False))
    return folder


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("certs", help="make the course's certificate authority and certificates").add_argument(
        "--out", default=str(CERTS), help="their folder (default autograder/work/cluster, out of git)")
    args = parser.parse_args(argv)
    folder = make_certs(Path(args.out))
    print(f"the cluster's certificates are in {folder}: copy ca.pem with scheduler.pem and scheduler-key.pem to "
          "the scheduler, ca.pem with worker.pem and worker-key.pem to each worker (docs/teaching.md); "
          "ca-key.pem never leaves this machine")
    return 0


if __name__ == "__main__":
    sys.exit(main())
