#!/usr/bin/env bash
# Makes a CA and a serving certificate for the webhook's Service with openssl,
# in run-gen-certs.sh-first/ next to this script: tls.crt, tls.key (the Secret)
# and cabundle-patch.yaml (the CA in the ValidatingWebhookConfiguration). Run
# it again to rotate.
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p run-gen-certs.sh-first
cd run-gen-certs.sh-first
days="${DAYS:-365}"
svc=sluice-webhook.sluice-system.svc
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days "$days" \
  -subj "/CN=sluice-webhook-ca" -keyout "$work/ca.key" -out "$work/ca.crt" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$svc" \
  -keyout tls.key -out "$work/tls.csr" 2>/dev/null
printf 'subjectAltName=DNS:%s,DNS:%s.cluster.local\nextendedKeyUsage=serverAuth\n' "$svc" "$svc" > "$work/ext.cnf"
openssl x509 -req -in "$work/tls.csr" -CA "$work/ca.crt" -CAkey "$work/ca.key" -CAcreateserial \
  -days "$days" -extfile "$work/ext.cnf" -out tls.crt 2>/dev/null
cat > cabundle-patch.yaml <<PATCH
- op: add
  path: /webhooks/0/clientConfig/caBundle
  value: $(base64 -w0 < "$work/ca.crt")
PATCH
echo "wrote tls.crt, tls.key and cabundle-patch.yaml in $(pwd)"
