import HTTPRouting
import Testing

@Suite("A request's client address: the gateway's word, never the client's")
struct ClientAddressTests {
    static func request(peer: String?, forwarded: String?) -> HTTPRequest {
        var headers = HTTPHeaders()
        if let forwarded { headers.add(name: "X-Forwarded-For", value: forwarded) }
        return HTTPRequest(method: .post, path: "/waitlist", headers: headers, remoteAddress: peer)
    }

    @Test("through the gateway on loopback, the entry nginx appended counts, whatever the client wrote before it")
    func throughGateway() {
        #expect(Self.request(peer: "127.0.0.1", forwarded: "203.0.113.7").clientAddress == "203.0.113.7")
        // A client rotating its own header to escape a per-client limit: the appended entry stays the same.
        for spoofed in ["1.1.1.1", "2.2.2.2, 3.3.3.3"] {
            #expect(Self.request(peer: "127.0.0.1", forwarded: "\(spoofed), 203.0.113.7").clientAddress == "203.0.113.7")
        }
        #expect(Self.request(peer: "::1", forwarded: "198.51.100.2").clientAddress == "198.51.100.2")
    }

    @Test("a peer that is not the gateway is the client, whatever header it sends; no header means the peer")
    func directPeer() {
        #expect(Self.request(peer: "198.51.100.9", forwarded: "127.0.0.1").clientAddress == "198.51.100.9")
        #expect(Self.request(peer: "127.0.0.1", forwarded: nil).clientAddress == "127.0.0.1")
        #expect(Self.request(peer: "127.0.0.1", forwarded: " ").clientAddress == "127.0.0.1")
        #expect(Self.request(peer: nil, forwarded: "1.2.3.4").clientAddress == "unknown")
    }
}
