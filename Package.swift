// swift-tools-version: 6.1
import PackageDescription

/// Settings every target shares: explicit existentials and imports that say what a file uses.
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "msi-hub",
    platforms: [.macOS(.v14), .iOS(.v17)],
    products: [
        .library(name: "Mongo", targets: ["Mongo"]),
        .library(name: "DAO", targets: ["DAO"]),
        .library(name: "HubCore", targets: ["HubCore"]),
        .library(name: "HubServer", targets: ["HubServer"]),
        .library(name: "FCM", targets: ["FCM"]),
        .library(name: "Relay", targets: ["Relay"]),
        .executable(name: "msi-hub", targets: ["msi-hub"]),
        .library(name: "MSIKit", targets: ["MSIKit"]),
        .executable(name: "msi-device", targets: ["msi-device"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth.git", from: "2.5.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/adam-fowler/compress-nio.git", from: "1.5.0"),
        // Up to 4.x: jwt-kit 5.7 needs swift-crypto 4.
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache.git", from: "2.1.1"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.7.1"),
    ],
    targets: [
        // C interop: libmongoc and libbson (Debian libmongoc-dev, libbson-dev).
        .systemLibrary(
            name: "CMongo",
            pkgConfig: "libmongoc-1.0",
            providers: [.apt(["libmongoc-dev", "libbson-dev"])]
        ),
        // JSON's string syntax, shared by every writer of JSON text (Mongo's legacy JSON, FCM's requests).
        .target(name: "JSONText", swiftSettings: swiftSettings),
        // Time in the units the hub stores: Unix milliseconds, Durations in whole milliseconds, the injected clock.
        .target(name: "HubTime", swiftSettings: swiftSettings),
        // The vocabulary every layer shares and that depends on nothing: the locale-to-language rule and the names
        // built on it (language topics, the default language).
        .target(name: "HubModel", swiftSettings: swiftSettings),
        // Verifying JWTs with jwt-kit: keys pinned to one algorithm each, the header read first, the claims as
        // strings, lists and times. Shared by the person assertions and the staff's OpenID Connect sign-in.
        .target(
            name: "SignedTokens",
            dependencies: [
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // Staff sign-in with an OpenID provider: discovery and JWKS shared and refreshed, the authorization code flow
        // with PKCE, the id_token's checks. Its HTTP goes through a small protocol the composition root fills.
        .target(
            name: "OIDC",
            dependencies: [
                "SignedTokens",
                "HubTime",
                "Curl",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // The safe Swift layer over libmongoc: BSON, JSON, client pool, collections, errors.
        .target(
            name: "Mongo",
            dependencies: [
                "CMongo",
                "JSONText",
                "HubTime",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // Channels, areas, subjects and messages on the nested icube documents.
        .target(
            name: "DAO",
            dependencies: ["Mongo", "HubTime", "HubModel", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings),
        // Migration from the legacy Node hub: normalisation rules, copy, import, verification.
        .target(name: "Migration", dependencies: ["Mongo", "DAO", "HubTime"], swiftSettings: swiftSettings),
        // The services every entry point calls (cube, messages, accounts) and the in-memory copies that
        // follow the database. No HTTP, no FCM: beside Relay, both below HubServer.
        .target(
            name: "HubCore",
            dependencies: [
                "HubModel",
                "DAO",
                "HubTime",
                "Mongo",
                .product(name: "HummingbirdBcrypt", package: "hummingbird-auth"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOPosix", package: "swift-nio"),
                "SignedTokens",
                "OIDC",
            ],
            swiftSettings: swiftSettings
        ),
        // The HTTP server: REST API, auth, the portal, configuration, the composition root.
        .target(
            name: "HubServer",
            dependencies: [
                "HubModel",
                "HubCore",
                "Curl",
                "DAO",
                "HubTime",
                "Mongo",
                "Relay",
                "FCM",
                "OIDC",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CompressNIO", package: "compress-nio"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Mustache", package: "swift-mustache"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            resources: [.copy("Resources/openapi.json"), .copy("Resources/portal")],
            swiftSettings: swiftSettings
        ),
        // The executable: `msi-hub serve` and the administration commands (users, tokens, migration).
        .executableTarget(
            name: "msi-hub",
            dependencies: [
                "HubServer",
                "HubCore",
                "Migration",
                "DAO",
                "Mongo",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // Test helpers shared by the test targets: the per-test database, `eventually`, the `.faults` tag.
        .target(
            name: "MongoTestSupport", dependencies: ["Mongo"], path: "Tests/MongoTestSupport",
            swiftSettings: swiftSettings),
        .testTarget(
            name: "MongoTests", dependencies: ["Mongo", "CMongo", "MongoTestSupport"], swiftSettings: swiftSettings),
        .testTarget(name: "HubTimeTests", dependencies: ["HubTime"], swiftSettings: swiftSettings),
        .testTarget(
            name: "DAOTests", dependencies: ["DAO", "HubTime", "Mongo", "MongoTestSupport"],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "MigrationTests",
            dependencies: [
                "Migration", "HubServer", "HubCore", "DAO", "Mongo", "MongoTestSupport",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HubCoreTests",
            dependencies: [
                "HubCore", "DAO", "Mongo", "MongoTestSupport", .product(name: "Logging", package: "swift-log"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HubServerTests",
            dependencies: [
                "HubServer", "HubCore", "DAO", "Mongo", "MongoTestSupport", "FakeFCM", "Relay", "FCM", "Curl",
                "FakeOIDC", "OIDC",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        // C interop: libcurl (Debian libcurl4-openssl-dev), typed wrappers over its variadic calls.
        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        // The HTTP client every outgoing call uses (FCM, webhooks, the person key loader): libcurl's easy and multi
        // handles owned, HTTP/2 with prior knowledge behind a gate, the plain-http policy. Knows no FCM.
        .target(
            name: "Curl",
            dependencies: [
                "CCurl",
                "HubTime",
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // FCM HTTP v1: service-account tokens, the message mapping, the FCM client, over the Curl client.
        // Knows no database.
        .target(
            name: "FCM",
            dependencies: [
                "Curl",
                "HubModel",
                "JSONText",
                "HubTime",
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // The durable workers on FCM and the database (the message outbox, the subscription reconciler), made of
        // shared parts (leases, rate window, outcome classifier). Beside HubCore, both below HubServer.
        .target(
            name: "Relay",
            dependencies: [
                "HubModel",
                "Curl",
                "FCM",
                "DAO",
                "Mongo",
                "HubTime",
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
                // HMAC-SHA256 of the webhook signatures.
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        // Test helper: a fake FCM HTTP v1 server (OAuth2 token endpoint, messages:send, topic subscriptions,
        // delivery to simulated phones) on loopback.
        .target(
            name: "FakeFCM",
            dependencies: [
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdHTTP2", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            path: "Tests/FakeFCM",
            swiftSettings: swiftSettings
        ),
        // Test helper: a small OpenID provider (discovery, JWKS, authorization and token endpoints) on loopback.
        .target(
            name: "FakeOIDC",
            dependencies: [
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            path: "Tests/FakeOIDC",
            swiftSettings: swiftSettings
        ),
        // The test OpenID provider as a process, for the browser tests and the README's walk.
        .executableTarget(
            name: "fake-oidc",
            dependencies: ["FakeOIDC"],
            path: "Tests/FakeOIDCServer",
            swiftSettings: swiftSettings
        ),
        // The fake FCM as a process, for the browser tests and benchmarks: `fake-fcm --port 0 --state-dir DIR`.
        .executableTarget(
            name: "fake-fcm",
            dependencies: ["FakeFCM"],
            path: "Tests/FakeFCMServer",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "FCMTests",
            dependencies: [
                "FCM", "Curl", "HubModel", "FakeFCM",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(name: "CurlTests", dependencies: ["Curl", "FakeFCM"], swiftSettings: swiftSettings),
        .testTarget(
            name: "OIDCTests",
            dependencies: [
                "OIDC", "SignedTokens", "HubTime", .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "RelayTests",
            dependencies: [
                "Relay", "FCM", "Curl", "HubModel", "DAO", "Mongo", "HubTime", "MongoTestSupport",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings),
        // The mobile app's library: local message store, cube, registration, listener, catch-up over the hub's HTTP
        // API. Depends on no other module of this package, and on nothing that does not build for iOS.
        .target(
            name: "MSIKit",
            // HubModel: the locale rule the hub subscribes and sends by (it depends on nothing, no server module).
            dependencies: ["HubModel", .product(name: "GRDB", package: "GRDB.swift")],
            swiftSettings: swiftSettings
        ),
        // A simulated phone on MSIKit that takes its pushes from the fake FCM's inbox.
        .executableTarget(
            name: "msi-device",
            dependencies: ["MSIKit", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "MSIKitTests",
            dependencies: ["MSIKit", .product(name: "GRDB", package: "GRDB.swift")],
            resources: [.copy("Fixtures")],
            swiftSettings: swiftSettings
        ),
        // MSIKit against a real hub and the fake FCM over HTTP (MSIKitTests keep to the library alone), and the
        // whole system with 200 simulated phones.
        .testTarget(
            name: "EndToEndTests",
            dependencies: [
                "MSIKit", "HubServer", "HubCore", "DAO", "Mongo", "FakeFCM", "MongoTestSupport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"), .product(name: "JWTKit", package: "jwt-kit"),
            ],
            swiftSettings: swiftSettings
        ),
    ]
)
