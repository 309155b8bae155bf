# One build, three binaries, a minimal non-root runtime image.
# No Docker engine runs on the machines this repository is developed and
# tested on, so this file is kept simple and is not built in CI.
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked \
      -p sluice-proxy -p sluice-watcher -p sluice-webhook --bins \
 && mkdir /out \
 && cp target/release/sluice-proxy target/release/sluice-watcher target/release/sluice-webhook /out/

# distroless/cc: glibc and CA certificates, no shell, runs as uid 65532.
FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/ /usr/local/bin/
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/sluice-proxy"]
