import Foundation
import Testing
@testable import USD

/// A deterministic mutation loop over the fixtures: every mutant must give a report (typed
/// errors become findings) without crashing or hanging. Set `USD_FUZZ_ITERATIONS` for a
/// longer run (see docs/usd.md).
@Suite("Fuzzing the reader with mutated fixtures")
struct FuzzTests {
    struct Generator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return state
        }
        mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(max(bound, 1))) }
    }

    static var iterations: Int {
        Int(ProcessInfo.processInfo.environment["USD_FUZZ_ITERATIONS"] ?? "") ?? 2_000
    }

    @Test("mutated packages never crash the reader", .timeLimit(.minutes(5)))
    func mutations() {
        let seeds = Fixtures.all.map { Fixtures.bytes($0) }.filter { !$0.isEmpty }
        var random = Generator(state: 0x9E37_79B9_7F4A_7C15)
        var readable = 0
        for iteration in 0..<Self.iterations {
            var bytes = seeds[iteration % seeds.count]
            mutate(&bytes, &random)
            do {
                let package = try USDZPackage(bytes: bytes)
                let stage = try USDStage(package: package)
                let report = InspectReport(stage: stage)
                _ = report.json
                readable += 1
            } catch is USDError {
                // A typed error is a correct outcome.
            } catch {
                Issue.record("untyped error \(error) at iteration \(iteration)")
            }
        }
        #expect(readable > 0)
    }

    private func mutate(_ bytes: inout [UInt8], _ random: inout Generator) {
        guard !bytes.isEmpty else { return }
        switch random.below(6) {
        case 0: // flip bytes
            for _ in 0..<(1 + random.below(8)) { bytes[random.below(bytes.count)] ^= UInt8(truncatingIfNeeded: random.next() | 1) }
        case 1: // truncate
            bytes.removeLast(random.below(bytes.count))
        case 2: // overwrite a little-endian 32/64-bit value with an interesting number
            let interesting: [UInt64] = [0, 1, 0x7F, 0xFF, 0xFFFF, 0x7FFF_FFFF, 0xFFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF, 1 << 40]
            let value = interesting[random.below(interesting.count)]
            let at = random.below(bytes.count)
            for i in 0..<8 where at + i < bytes.count { bytes[at + i] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(i))) }
        case 3: // duplicate a chunk
            let start = random.below(bytes.count)
            let length = min(random.below(256), bytes.count - start)
            bytes.insert(contentsOf: bytes[start..<(start + length)], at: random.below(bytes.count))
        case 4: // delete a chunk
            let start = random.below(bytes.count)
            bytes.removeSubrange(start..<min(bytes.count, start + random.below(64)))
        default: // random bytes in the crate or text region
            let start = random.below(bytes.count)
            for i in start..<min(bytes.count, start + random.below(32)) { bytes[i] = UInt8(truncatingIfNeeded: random.next()) }
        }
    }
}
