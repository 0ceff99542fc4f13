import Foundation
import Testing
@testable import ObjectStore

/// The published Signature V4 examples for S3 (GET object with a Range header; a presigned
/// GET valid for one day), with their canonical request, string to sign and signature.
@Suite("Signature V4")
struct SignatureV4Tests {
    let signer = SignatureV4(accessKeyId: "AKIAIOSFODNN7EXAMPLE",
                             secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", region: "us-east-1")
    /// 2013-05-24T00:00:00Z
    let date = Date(timeIntervalSince1970: 1_369_353_600)

    @Test("the GET-object example: canonical request, string to sign and signature as published")
    func getObjectExample() {
        let request = SignatureV4.Request(
            method: "GET", path: "/test.txt",
            headers: [("Host", "examplebucket.s3.amazonaws.com"), ("Range", "bytes=0-9"),
                      ("x-amz-content-sha256", SignatureV4.emptyPayloadHash), ("x-amz-date", "20130524T000000Z")],
            payloadHash: SignatureV4.emptyPayloadHash)
        let canonical = SignatureV4.canonicalRequest(request)
        #expect(canonical == """
            GET
            /test.txt

            host:examplebucket.s3.amazonaws.com
            range:bytes=0-9
            x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
            x-amz-date:20130524T000000Z

            host;range;x-amz-content-sha256;x-amz-date
            e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
            """)
        let toSign = signer.stringToSign(canonicalRequest: canonical, date: date)
        #expect(toSign == """
            AWS4-HMAC-SHA256
            20130524T000000Z
            20130524/us-east-1/s3/aws4_request
            7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972
            """)
        #expect(signer.signature(stringToSign: toSign, date: date)
                == "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
        #expect(signer.authorization(for: request, date: date) == "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
    }

    @Test("the presigned-URL example: signed host only, UNSIGNED-PAYLOAD, 86400 s")
    func presignedExample() {
        let request = SignatureV4.Request(method: "GET", path: "/test.txt",
                                          headers: [("host", "examplebucket.s3.amazonaws.com")],
                                          payloadHash: SignatureV4.unsignedPayload)
        let query = signer.presignedQuery(for: request, date: date, expires: 86_400)
        #expect(query.last?.0 == "X-Amz-Signature")
        #expect(query.last?.1 == "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404")
        #expect(SignatureV4.canonicalQuery(Array(query.dropLast())) == "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host")
    }

    @Test("a presigned PUT signs content-length and the public host, and keeps the secret out of the URL")
    func presignedPut() throws {
        let store = S3ObjectStore(configuration: S3Configuration(
            endpoint: "http://seaweedfs:8333", publicEndpoint: "https://s3.example.test/", region: "eu-west-1",
            bucket: "rooms", accessKeyId: "AKID", secretAccessKey: "very-secret-key"))
        let put = try store.presignPut(key: "rooms/r 1/v1/source.usdz", contentLength: 1234, contentType: nil,
                                       expiresIn: .seconds(900))
        #expect(put.url.hasPrefix("https://s3.example.test/rooms/rooms/r%201/v1/source.usdz?"))
        #expect(put.url.contains("X-Amz-SignedHeaders=content-length%3Bhost"))
        #expect(put.url.contains("X-Amz-Expires=900"))
        #expect(!put.url.contains("very-secret-key"))
        #expect(put.headers == ["Content-Length": "1234"])
        #expect(!store.configuration.description.contains("very-secret-key"))
        #expect(throws: ObjectStoreError.self) {
            try store.presignPut(key: "k", contentLength: 1, contentType: nil, expiresIn: .seconds(8 * 24 * 3600))
        }
    }

    @Test("URI encoding: unreserved characters stay, everything else is %XX upper-case")
    func encoding() {
        #expect(S3URIEncoding.encode("a b/c~_-.ü") == "a%20b%2Fc~_-.%C3%BC")
        #expect(S3URIEncoding.encode("a b/c", keepSlash: true) == "a%20b/c")
    }

    @Test("errors: 5xx and network retriable, 403 and 404 not; no secret in the description")
    func errors() {
        #expect(ObjectStoreError(code: ObjectStoreError.code(forStatus: 503, storeCode: nil), message: "x").isRetriable)
        #expect(ObjectStoreError(code: .transport, message: "x").isRetriable)
        #expect(!ObjectStoreError(code: ObjectStoreError.code(forStatus: 403, storeCode: nil), message: "x").isRetriable)
        #expect(ObjectStoreError.code(forStatus: 404, storeCode: "NoSuchKey") == .notFound)
        #expect(ObjectStoreError.code(forStatus: 400, storeCode: nil) == .rejected)
        #expect(ObjectStoreError.code(forStatus: 400, storeCode: "SlowDown") == .unavailable)
        #expect(ObjectStoreError.code(forStatus: 429, storeCode: nil) == .unavailable)
    }
}
