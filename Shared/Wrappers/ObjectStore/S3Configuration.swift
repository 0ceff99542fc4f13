import Settings

/// Where the S3 store is and how to sign for it.
///
/// `endpoint` is what the services reach (`http://127.0.0.1:8333`, `http://seaweedfs:8333`);
/// `publicEndpoint` is what the phone reaches, and presigned URLs are signed for its host.
public struct S3Configuration: Sendable, CustomStringConvertible {
    public var endpoint: String
    public var publicEndpoint: String
    public var region: String
    public var bucket: String
    public var accessKeyId: String
    public var secretAccessKey: String

    public init(endpoint: String, publicEndpoint: String? = nil, region: String = "us-east-1", bucket: String,
                accessKeyId: String, secretAccessKey: String) {
        self.endpoint = Self.trimmed(endpoint)
        self.publicEndpoint = Self.trimmed(publicEndpoint ?? endpoint)
        self.region = region
        self.bucket = bucket
        self.accessKeyId = accessKeyId
        self.secretAccessKey = secretAccessKey
    }

    private static func trimmed(_ url: String) -> String {
        var url = url
        while url.hasSuffix("/") { url.removeLast() }
        return url
    }

    /// Reads `S3_ENDPOINT`, `S3_PUBLIC_ENDPOINT` (default: the endpoint), `S3_REGION`
    /// (default `us-east-1`), `S3_BUCKET`, `S3_ACCESS_KEY_ID` and `S3_SECRET_ACCESS_KEY`
    /// into `reader` (problems are collected there).
    public static func read(from reader: inout EnvironmentReader) -> S3Configuration {
        let endpoint = reader.string("S3_ENDPOINT")
        let publicEndpoint = reader.optionalString("S3_PUBLIC_ENDPOINT")
        for (key, value) in [("S3_ENDPOINT", endpoint), ("S3_PUBLIC_ENDPOINT", publicEndpoint ?? "")]
        where !value.isEmpty && !(value.hasPrefix("http://") || value.hasPrefix("https://")) {
            reader.fail("\(key) must be an http:// or https:// URL")
        }
        return S3Configuration(
            endpoint: endpoint, publicEndpoint: publicEndpoint,
            region: reader.string("S3_REGION", default: "us-east-1"),
            bucket: reader.string("S3_BUCKET"),
            accessKeyId: reader.string("S3_ACCESS_KEY_ID"),
            secretAccessKey: reader.string("S3_SECRET_ACCESS_KEY"))
    }

    /// The settings as environment variables (for `.backbone/dev.env` and child processes).
    public var environment: [String: String] {
        ["S3_ENDPOINT": endpoint, "S3_PUBLIC_ENDPOINT": publicEndpoint, "S3_REGION": region, "S3_BUCKET": bucket,
         "S3_ACCESS_KEY_ID": accessKeyId, "S3_SECRET_ACCESS_KEY": secretAccessKey]
    }

    /// Never shows the secret.
    public var description: String {
        "S3(endpoint: \(endpoint), public: \(publicEndpoint), region: \(region), bucket: \(bucket), key: \(accessKeyId))"
    }
}
