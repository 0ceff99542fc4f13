import Auth
import Foundation
import Testing

@Suite("Storage signed-URL tokens: one object, one purpose, one window")
struct StorageURLSignerTests {
    let secret = Array("storage-signer-secret-0123456789".utf8)

    @Test("an upload token admits its object, exactly its size (or up to its max_size), until it expires; not another object, not after expiry, not as a download token, not with another secret")
    func uploadTokens() {
        let upload = StorageURLSigner(secret: secret, purpose: .upload)
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let key = "rooms/r1/v1/source.usdz"
        let token = upload.token(for: key, seconds: 900, size: 2000, now: now)
        let grant = upload.grant(token, for: key, now: now.addingTimeInterval(899))
        #expect(grant?.size == 2000 && grant?.admits(bytes: 2000) == true && grant?.admits(bytes: 1999) == false)
        #expect(upload.grant(token, for: "rooms/r1/v1/roomplan.json", now: now) == nil)
        #expect(upload.grant(token, for: key, now: now.addingTimeInterval(900)) == nil)
        #expect(StorageURLSigner(secret: secret, purpose: .download).grant(token, for: key, now: now) == nil)
        #expect(StorageURLSigner(secret: Array("another-secret".utf8), purpose: .upload).grant(token, for: key, now: now) == nil)
        let open = upload.grant(upload.token(for: key, seconds: 60, maxSize: 4096, now: now), for: key, now: now)
        #expect(open?.admits(bytes: 4096) == true && open?.admits(bytes: 4097) == false && open?.admits(bytes: 0) == false)
        let download = StorageURLSigner(secret: secret).token(for: key, seconds: 60, now: now)
        #expect(upload.grant(download, for: key, now: now) == nil)
    }
}
