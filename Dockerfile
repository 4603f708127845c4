# msi-hub: build with the Swift toolchain, run on a slim image with the runtime libraries only.

FROM swift:6.3.1-bookworm AS build
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        libmongoc-dev libbson-dev libcurl4-openssl-dev pkg-config \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Dependencies first, so a change to the sources does not fetch them again.
COPY Package.swift ./
RUN swift package resolve
COPY Sources ./Sources
COPY Tests ./Tests
RUN swift build -c release --product msi-hub --static-swift-stdlib \
    && mkdir -p /out \
    && cp "$(swift build -c release --show-bin-path)/msi-hub" /out/ \
    && cp -R "$(swift build -c release --show-bin-path)"/*.resources /out/ 2>/dev/null || true

FROM debian:bookworm-slim
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        libmongoc-1.0-0 libbson-1.0-0 libcurl4 ca-certificates tzdata \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /app --shell /usr/sbin/nologin msi
WORKDIR /app
COPY --from=build /out/ /app/
USER msi
ENV HOST=0.0.0.0 PORT=8080
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s CMD ["/app/msi-hub", "--help"]
ENTRYPOINT ["/app/msi-hub"]
CMD ["serve"]
