// swift-tools-version: 6.1
import PackageDescription

// PDQ matching counts differing bits (popcount) millions of times per second; every x86-64 CPU since 2008 has the
// POPCNT instruction, but Swift's baseline target does not assume it. Only the targets that match hashes use it.
#if arch(x86_64)
let hashMatching: [SwiftSetting] = [.unsafeFlags(["-Xcc", "-mpopcnt"])]
#else
let hashMatching: [SwiftSetting] = []
#endif

let package = Package(
    name: "Sluice",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "sluice", targets: ["sluice"]),
        .executable(name: "sluice-bench", targets: ["sluice-bench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.0.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.24.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.5.0"),
        .package(url: "https://github.com/apple/swift-crypto", "3.12.0"..<"5.0.0"),
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.7.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth", from: "2.0.0"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache", from: "2.0.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.80.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.0.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.5.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.1.0"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.34.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.29.0"),
    ],
    targets: [
        // C: libvips and libexif, touched only by SluiceImaging.
        .systemLibrary(name: "CVips", path: "Sources/CVips", pkgConfig: "vips",
                       providers: [.apt(["libvips-dev"])]),
        .systemLibrary(name: "CExif", path: "Sources/CExif", pkgConfig: "libexif",
                       providers: [.apt(["libexif-dev"])]),
        // lcms2: the shim keeps the ICC transforms libvips' icc_transform would build anew for every upload;
        // libjpeg (libjpeg62-turbo-dev, which libvips-dev installs): it saves JPEGs from memory on the calling thread.
        .target(name: "CVipsShim", dependencies: ["CVips"], path: "Sources/CVipsShim",
                linkerSettings: [.linkedLibrary("z"), .linkedLibrary("lcms2"), .linkedLibrary("jpeg")]),

        .target(name: "SluiceCore", dependencies: [
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Crypto", package: "swift-crypto"),
        ], swiftSettings: hashMatching),
        .target(name: "SluiceImaging", dependencies: [
            "SluiceCore", "CVips", "CVipsShim", "CExif",
        ]),
        .target(name: "SluiceText", dependencies: ["SluiceCore"]),
        .target(name: "SluiceProviders", dependencies: [
            "SluiceCore",
            .product(name: "AsyncHTTPClient", package: "async-http-client"),
            .product(name: "NIOFoundationCompat", package: "swift-nio"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Metrics", package: "swift-metrics"),
        ]),
        .target(name: "SluiceStore", dependencies: [
            "SluiceCore",
            .product(name: "GRDB", package: "GRDB.swift"),
            .product(name: "GRDBSQLite", package: "GRDB.swift"),
            .product(name: "PostgresNIO", package: "postgres-nio"),
            .product(name: "NIOSSL", package: "swift-nio-ssl"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // The stages, both pipelines, the runner's metrics, reprocessing and human decisions.
        .target(name: "SluicePipeline", dependencies: [
            "SluiceCore", "SluiceText",
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Metrics", package: "swift-metrics"),
        ], swiftSettings: hashMatching),
        // Intake: the drop-folder service, text queues, backlog ingest, the metrics publisher.
        .target(name: "SluiceDaemon", dependencies: [
            "SluiceCore", "SluicePipeline",
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Prometheus", package: "swift-prometheus"),
        ]),
        .target(name: "SluiceAPI", dependencies: [
            "SluiceCore", "SluicePipeline", "SluiceProviders",
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "JWTKit", package: "jwt-kit"),
            .product(name: "HummingbirdAuth", package: "hummingbird-auth"),
            .product(name: "HummingbirdBcrypt", package: "hummingbird-auth"),
            .product(name: "Mustache", package: "swift-mustache"),
            .product(name: "AsyncHTTPClient", package: "async-http-client"),
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Prometheus", package: "swift-prometheus"),
            .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ], exclude: ["openapi.json"], resources: [.copy("Console/Resources")]),
        // The composition root: the only target that names concrete adapters, store and processor.
        .target(name: "SluiceServices", dependencies: [
            "SluiceCore", "SluiceImaging", "SluiceText", "SluiceProviders", "SluiceStore", "SluicePipeline", "SluiceDaemon", "SluiceAPI",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Prometheus", package: "swift-prometheus"),
        ]),
        .target(name: "SluiceCLI", dependencies: [
            "SluiceServices", "SluiceAPI", "SluiceDaemon", "SluicePipeline", "SluiceCore",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Metrics", package: "swift-metrics"),
            .product(name: "Prometheus", package: "swift-prometheus"),
        ]),
        .executableTarget(name: "sluice", dependencies: ["SluiceCLI", .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio")]),
        .executableTarget(name: "sluice-bench", dependencies: ["SluiceCore", "SluiceImaging", "SluicePipeline", "SluiceTesting",
                                                               .product(name: "ArgumentParser", package: "swift-argument-parser")],
                          path: "Benchmarks/sluice-bench", swiftSettings: hashMatching),

        // Test support: fake provider servers on loopback, config and fixture helpers.
        .target(name: "SluiceTesting", dependencies: [
            "SluiceCore",
            .product(name: "JWTKit", package: "jwt-kit"),
            .product(name: "CryptoExtras", package: "swift-crypto"),
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
            .product(name: "NIOFoundationCompat", package: "swift-nio"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ]),
        .testTarget(name: "SluiceTests", dependencies: [
            "SluiceCore", "SluiceImaging", "SluiceProviders", "SluiceStore", "SluicePipeline", "SluiceDaemon", "SluiceText",
            "SluiceServices", "SluiceCLI", "SluiceTesting", "sluice",
            .product(name: "MetricsTestKit", package: "swift-metrics"),
            .product(name: "HummingbirdTesting", package: "hummingbird"),
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "AsyncHTTPClient", package: "async-http-client"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
            .product(name: "JWTKit", package: "jwt-kit"),
            .product(name: "PostgresNIO", package: "postgres-nio"),
            "SluiceAPI",
        ]),
    ],
    swiftLanguageModes: [.v6]
)
