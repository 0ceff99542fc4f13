import Auth
import BackboneTestSupport
import Contracts
import Foundation
import ObjectStore
import Postgres
import Synchronization
import Testing

/// The upload checklist of seed `004_*` (G3), run against the services as separate processes
/// (ingest, the transcode worker and the rest), SeaweedFS, the embedded broker and PostgreSQL,
/// with `curl` as the phone's background `URLSession`: 100 uploads from 10 users, each with one
/// interruption of its own — upload-init retried after a lost answer, a PUT cut off mid-body and
/// resumed from the upload's state, a URL used after it expired and then renewed, upload-complete
/// never sent (the server completes it), upload-complete sent twice, ingest killed with SIGKILL
/// between the PUTs and the completion, the broker down at completion. Every upload must end
/// `ready` exactly once, one version per upload, the quota charged once per version, and no object
/// in the bucket that no version owns (boto3 lists it).
@Suite("The phone's upload checklist", .serialized, .enabled(if: Integration.isEnabled), .timeLimit(.minutes(10)))
struct PhoneUploadChecklistTests {
    enum Fault: String, CaseIterable {
        case none = "none"
        case initRetried = "init retried after a lost answer"
        case putCutOff = "PUT cut off, resumed from the state"
        case urlExpired = "URL used after expiry, renewed"
        case neverCompleted = "upload-complete never sent"
        case completedTwice = "upload-complete sent twice"
        case ingestKilled = "ingest kill -9 before completion"
        case brokerDown = "broker down at completion"
    }

    final class Phone: Sendable {
        let index: Int
        let user: String
        let token: String
        let fault: Fault
        let scan: String
        let answer = Mutex<RoomUploadInitResponse?>(nil)
        let violations = Mutex<[String]>([])

        init(index: Int, stack: FaultStack) {
            self.index = index
            user = "phone-user-\(index % 10)"
            token = stack.codec.issue(userID: user, ttl: 86_400)
            fault = Fault.allCases[index % Fault.allCases.count]
            scan = RoomUploadDriver.scans[index % RoomUploadDriver.scans.count]
        }

        var usdzPath: String { RoomUploadDriver.fixtures.appendingPathComponent("\(scan).usdz").path }
        var jsonPath: String { RoomUploadDriver.fixtures.appendingPathComponent("\(scan).roomplan.json").path }
        func violation(_ text: String) { violations.withLock { $0.append("upload \(index) (\(fault.rawValue)): \(text)") } }

        func initBody(versionID: String? = nil) -> Data {
            let usdz = (try? FileManager.default.attributesOfItem(atPath: usdzPath)[.size] as? Int) ?? 0
            let json = (try? FileManager.default.attributesOfItem(atPath: jsonPath)[.size] as? Int) ?? 0
            let body = RoomUploadInitRequest(title: "scan \(index)", tags: ["phone"], visibility: .public, usdzBytes: Int64(usdz),
                                             roomplanJsonBytes: Int64(json), versionId: versionID,
                                             clientUploadId: versionID == nil ? "task-\(index)" : nil)
            return Data((try? ContractCoding.encode(body)) ?? [])
        }

        func completeBody(_ answer: RoomUploadInitResponse) -> Data {
            let body = RoomVersionCompleteRequest(
                roomId: answer.roomId, versionId: answer.versionId, title: "scan \(index)", tags: ["phone"], visibility: .public,
                source: RoomSource(usdzKey: answer.usdz.key, usdzBytes: answer.usdz.bytes, roomplanJsonKey: answer.roomplanJson.key,
                                   roomplanJsonBytes: answer.roomplanJson.bytes),
                redactions: [])
            return Data((try? ContractCoding.encode(body)) ?? [])
        }
    }

    /// Sends until answered with one of `expect` (a 503 must carry `Retry-After`; no answer is retried).
    static func call(_ stack: FaultStack, _ phone: Phone, _ method: String, _ path: String, body: Data? = nil,
                     expect: Set<Int>, timeout: Duration = .seconds(90)) async -> FaultStack.Response? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let answer = await stack.http(method, "ingest", path, token: phone.token, body: body, timeout: 20)
            if let answer, expect.contains(answer.status) { return answer }
            if let answer, answer.status != 503 {
                phone.violation("\(method) \(path) answered \(answer.status): \(String(decoding: answer.body, as: UTF8.self).prefix(200))")
                return nil
            }
            if let answer, answer.retryAfter == nil { phone.violation("\(method) \(path): 503 without Retry-After") }
            try? await Task.sleep(for: .milliseconds(400))
        }
        phone.violation("\(method) \(path) not answered \(expect.sorted()) within \(timeout)")
        return nil
    }

    final class Counter: Sendable {
        let value = Atomic<Int>(0)
        func add() { value.add(1, ordering: .relaxed) }
        var count: Int { value.load(ordering: .relaxed) }
    }

    /// The phone's PUT: a 403 (expired URL) re-signs through upload-init with the version id.
    static func put(_ stack: FaultStack, _ phone: Phone, usdz: Bool, file: String, renewals: Counter) async -> Bool {
        for _ in 0..<4 {
            guard let answer = phone.answer.withLock({ $0 }) else { return false }
            let object = usdz ? answer.usdz : answer.roomplanJson
            guard let url = object.url else { return false }
            let put = try? await PlainHTTP.send("PUT", url, headers: object.headers, file: file)
            if put?.status == 200 { return true }
            if put?.status == 403 {
                renewals.add()
                guard let renewed = await call(stack, phone, "POST", "/rooms/uploads", body: phone.initBody(versionID: answer.versionId),
                                               expect: [200]),
                      let fresh = try? ContractCoding.decode(RoomUploadInitResponse.self, from: Array(renewed.body)) else { return false }
                if fresh.versionId != answer.versionId { phone.violation("renewal answered another version") }
                phone.answer.withLock { $0 = fresh }
            }
        }
        phone.violation("PUT \(file) never answered 200")
        return false
    }

    /// A PUT that stops after a tenth of the body (the app suspended mid-transfer).
    static func cutOffPut(_ url: String, file: String, bytes: Int) async {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "head -c \(max(1, bytes / 10)) \"$1\" | curl -sS -o /dev/null -X PUT -H 'Expect:' -H \"Content-Length: \(bytes)\" --data-binary @- --max-time 2 \"$2\"",
                             "sh", file, url]
        process.standardError = FileHandle.nullDevice
        try? process.run()
        await Task.detached { process.waitUntilExit() }.value
    }

    @Test("100 uploads from 10 users, each interrupted its own way: every one ready exactly once, one version each, charged once, no orphan object")
    func checklist() async throws {
        try await SeaweedFSFixture.with { s3 in try await FaultStack.with("phone", s3: s3) { stack in
            // The server's completion waits until ingest is started again below (3600 s of quiet
            // first), so that the broker-down completions are the app's own.
            stack.extraEnvironment["ingest"] = [
                "INGEST_AUTO_COMPLETE_AFTER_SECONDS": "3600", "INGEST_UPLOAD_SWEEP_INTERVAL_MS": "1000",
                "INGEST_UPLOAD_URL_TTL_SECONDS": "5",
            ]
            try stack.startAll()
            #expect(await stack.waitReady() != nil, "\(stack.logs)")
            let phones = (0..<100).map { Phone(index: $0, stack: stack) }
            let renewals = Counter()

            // Upload-init and the PUTs, ten phones at a time.
            for chunk in stride(from: 0, to: phones.count, by: 10) {
                await withTaskGroup(of: Void.self) { group in
                    for phone in phones[chunk..<min(chunk + 10, phones.count)] {
                        group.addTask {
                            if phone.fault == .initRetried {
                                // The first answer is lost on the way to the phone.
                                _ = await Self.call(stack, phone, "POST", "/rooms/uploads", body: phone.initBody(), expect: [201])
                            }
                            guard let created = await Self.call(stack, phone, "POST", "/rooms/uploads", body: phone.initBody(), expect: [201]),
                                  let answer = try? ContractCoding.decode(RoomUploadInitResponse.self, from: Array(created.body)) else { return }
                            phone.answer.withLock { $0 = answer }
                            if phone.fault == .putCutOff, let url = answer.usdz.url {
                                await Self.cutOffPut(url, file: phone.usdzPath, bytes: Int(answer.usdz.bytes))
                                // Relaunched: what the store holds, and a URL for what is missing.
                                guard let state = await Self.call(stack, phone, "GET", "/rooms/uploads/\(answer.versionId)", expect: [200]),
                                      let parsed = try? ContractCoding.decode(RoomUploadStateResponse.self, from: Array(state.body)) else { return }
                                if parsed.usdz?.url == nil { phone.violation("the state offers no URL for the cut-off source.usdz") }
                                if !parsed.stored.isEmpty { phone.violation("the state holds \(parsed.stored.map(\.key)) after a cut-off PUT") }
                            }
                            if phone.fault == .urlExpired { try? await Task.sleep(for: .seconds(6)) }
                            _ = await Self.put(stack, phone, usdz: true, file: phone.usdzPath, renewals: renewals)
                            _ = await Self.put(stack, phone, usdz: false, file: phone.jsonPath, renewals: renewals)
                            guard let current = phone.answer.withLock({ $0 }) else { return }
                            switch phone.fault {
                            case .neverCompleted, .ingestKilled, .brokerDown: return
                            case .completedTwice:
                                _ = await Self.call(stack, phone, "POST", "/rooms/versions", body: phone.completeBody(current), expect: [202])
                                _ = await Self.call(stack, phone, "POST", "/rooms/versions", body: phone.completeBody(current), expect: [202])
                            default:
                                _ = await Self.call(stack, phone, "POST", "/rooms/versions", body: phone.completeBody(current), expect: [202])
                            }
                        }
                    }
                }
            }

            // The broker down at completion: 503 with Retry-After, completable once it is back.
            try stack.brokersDown()
            var refused = 0
            for phone in phones where phone.fault == .brokerDown {
                guard let answer = phone.answer.withLock({ $0 }) else { continue }
                let down = await stack.http("POST", "ingest", "/rooms/versions", token: phone.token, body: phone.completeBody(answer), timeout: 30)
                if down?.status == 503, down?.retryAfter != nil { refused += 1 } else { phone.violation("with the broker down answered \(down?.status ?? 0)") }
            }
            try stack.brokersUp()
            for phone in phones where phone.fault == .brokerDown {
                guard let answer = phone.answer.withLock({ $0 }) else { continue }
                _ = await Self.call(stack, phone, "POST", "/rooms/versions", body: phone.completeBody(answer), expect: [202], timeout: .seconds(120))
            }

            // Ingest killed between the PUTs and the completion, then started again (now completing
            // quiet uploads after 2 s: the never-completed ones, and perhaps these before the app resends).
            stack.kill("ingest")
            stack.extraEnvironment["ingest"]?["INGEST_AUTO_COMPLETE_AFTER_SECONDS"] = "2"
            try stack.spawn("ingest")
            #expect(await stack.waitReady(["ingest"]) != nil, "\(stack.logs)")
            for phone in phones where phone.fault == .ingestKilled {
                guard let answer = phone.answer.withLock({ $0 }) else { continue }
                _ = await Self.call(stack, phone, "POST", "/rooms/versions", body: phone.completeBody(answer), expect: [202])
            }

            // Every upload ready exactly once (the never-completed ones by the server).
            let rooms = phones.compactMap { phone in
                phone.answer.withLock { $0 }.map { RoomUploadDriver.Room(roomID: $0.roomId, versionID: $0.versionId, owner: phone.user) }
            }
            var audit = RoomAudit()
            _ = await Integration.eventually(timeout: .seconds(300), every: .seconds(3)) {
                audit = (try? await RoomAudit.audit(rooms, stack: stack)) ?? audit
                return audit.isExact
            }
            let violations = phones.flatMap { $0.violations.withLock { $0 } }
            let versions = try await stack.client.query(
                "SELECT owner_user_id, count(*)::bigint AS n, sum(usdz_bytes + roomplan_json_bytes)::bigint AS bytes FROM room_versions WHERE owner_user_id LIKE 'phone-user-%' GROUP BY owner_user_id")
            let usage = try await stack.client.query(
                "SELECT user_id, sum(bytes)::bigint AS bytes FROM room_upload_usage WHERE user_id LIKE 'phone-user-%' GROUP BY user_id")
            let versionCount = try versions.reduce(0) { $0 + (try $1.decode(Int.self, "n")) }
            let versionBytes = Dictionary(uniqueKeysWithValues: try versions.map { (try $0.decode(String.self, "owner_user_id"), try $0.decode(Int.self, "bytes")) })
            let charged = Dictionary(uniqueKeysWithValues: try usage.map { (try $0.decode(String.self, "user_id"), try $0.decode(Int.self, "bytes")) })
            let owned = Set(rooms.map { "rooms/\($0.roomID)/\($0.versionID)/" })
            let keys = try await Boto3Witness.keys(s3, prefix: "rooms/")
            let orphans = keys.filter { key in !owned.contains { key.hasPrefix($0) } }
            let byKind = Dictionary(grouping: phones, by: \.fault).map { "\($0.key.rawValue) \($0.value.count)" }.sorted()
            print("""
                phone checklist: uploads \(phones.count), faults by kind: \(byKind.joined(separator: ", ")); \
                renewals after 403 \(renewals.count), refused with the broker down \(refused); \
                versions \(versionCount) (duplicates \(versionCount - rooms.count)), \(audit), objects \(keys.count), orphans \(orphans.count)
                """)
            #expect(violations.isEmpty, "\(violations.prefix(10))")
            #expect(rooms.count == 100)
            #expect(audit.isExact, "\(audit)\n\(stack.logs)")
            #expect(versionCount == rooms.count, "one version per upload")
            #expect(charged == versionBytes, "quota charged once per version")
            #expect(orphans.isEmpty, "\(orphans.prefix(5))")
            #expect(renewals.count >= phones.filter { $0.fault == .urlExpired }.count)
            #expect(refused == phones.filter { $0.fault == .brokerDown }.count)
        } }
    }
}
