# Build a release binary with Swift 6 on bookworm, run it on a slim bookworm with only the
# shared libraries it links (libcurl, libcrypto, libssh2, libsqlite3, libjemalloc, libqrencode).
FROM swift:6.2-bookworm AS build
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libcurl4-openssl-dev libssl-dev libssh2-1-dev libsqlite3-dev libjemalloc-dev libqrencode-dev pkg-config \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Package.swift ./
COPY Sources ./Sources
COPY Tests ./Tests
# The Swift runtime is linked statically, so the runtime image needs no Swift.
RUN swift build -c release --product tether --static-swift-stdlib \
 && install -D "$(swift build -c release --static-swift-stdlib --show-bin-path)/tether" /out/tether

FROM debian:bookworm-slim
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libcurl4 libssl3 libssh2-1 libsqlite3-0 libjemalloc2 libqrencode4 ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/tether /usr/local/bin/tether
USER nobody
ENTRYPOINT ["tether"]
