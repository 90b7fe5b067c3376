#!/usr/bin/env bash
# Signs a release's checksums.txt with cosign (goreleaser's `signs:` step runs it): with the key
# in COSIGN_KEY (a key file path, or env://VAR, or a KMS URI; COSIGN_PASSWORD unlocks it), or,
# with CAPCTL_SIGN_KEYLESS=1, with the release environment's keyless identity (Sigstore's OIDC
# flow; CI provides the token), which also writes the certificate. Verify with
#   cosign verify-blob --key cosign.pub --signature checksums.txt.sig checksums.txt
#   cosign verify-blob --certificate checksums.txt.pem --signature checksums.txt.sig \
#     --certificate-identity ... --certificate-oidc-issuer ... checksums.txt
#
# Usage: hack/sign-checksums.sh ARTIFACT SIGNATURE [CERTIFICATE]
set -euo pipefail
artifact="${1:?artifact}" signature="${2:?signature}" certificate="${3:-}"
command -v cosign >/dev/null || { echo "sign-checksums: cosign is not on PATH" >&2; exit 1; }
if [[ -n "${COSIGN_KEY:-}" ]]; then
  exec cosign sign-blob --yes --key "$COSIGN_KEY" --output-signature "$signature" "$artifact"
fi
if [[ -n "${CAPCTL_SIGN_KEYLESS:-}" ]]; then
  exec cosign sign-blob --yes --output-certificate "${certificate:?no certificate path}" --output-signature "$signature" "$artifact"
fi
echo "sign-checksums: neither COSIGN_KEY nor CAPCTL_SIGN_KEYLESS is set" >&2
exit 1
