import Foundation
import Testing
@testable import Postgres

@Suite("Postgres text formats")
struct PostgresTextFormatTests {
    @Test("dates bind as UTC ISO-8601 with microseconds and parse back from server output")
    func dateRoundTrip() throws {
        let date = Date(timeIntervalSince1970: 1_767_225_845.123456)
        #expect(date.postgresText == "2026-01-01T00:04:05.123456Z")
        let parsed = try #require(Date.decode(postgresText: "2026-01-01 00:04:05.123456+00"))
        #expect(abs(parsed.timeIntervalSince(date)) < 0.000_001)
        let offset = try #require(Date.decode(postgresText: "2026-01-01 05:34:05.123456+05:30"))
        #expect(abs(offset.timeIntervalSince(date)) < 0.000_001)
        let noFraction = try #require(Date.decode(postgresText: "1969-12-31 23:59:59-01"))
        #expect(noFraction.timeIntervalSince1970 == 3599)
        #expect(Date.decode(postgresText: "2026-02-03")?.timeIntervalSince1970 == 1_770_076_800)
        #expect(Date.decode(postgresText: "not a date") == nil)
        #expect(Date(timeIntervalSince1970: -0.5).postgresText == "1969-12-31T23:59:59.500000Z")
    }

    @Test("scalars bind in Postgres input syntax")
    func scalarTexts() {
        #expect(true.postgresText == "true")
        #expect(Double.infinity.postgresText == "Infinity")
        #expect(Double.nan.postgresText == "NaN")
        #expect(Int32(-7).postgresText == "-7")
        #expect((nil as Int64?).postgresText == nil)
        #expect(([0x00, 0xAB, 0xFF] as [UInt8]).postgresText == "\\x00abff")
        #expect(UUID(uuidString: "6BA7B810-9DAD-11D1-80B4-00C04FD430C8")!.postgresText == "6ba7b810-9dad-11d1-80b4-00c04fd430c8")
    }

    @Test("string arrays quote embedded quotes and backslashes and parse back")
    func arrays() {
        let values = ["plain", "with \"quote\"", "back\\slash", "", "NULL"]
        let text = values.postgresText!
        #expect(text == #"{"plain","with \"quote\"","back\\slash","","NULL"}"#)
        #expect([String].decode(postgresText: text) == values)
        #expect([Int64].decode(postgresText: "{1,-2,3}") == [1, -2, 3])
        #expect([Int64].decode(postgresText: "{1,NULL}") == nil)
        // Plain integer literals take the byte-wise path; anything else the general parser,
        // with the same answers.
        #expect([Int64].decode(postgresText: "{}") == [])
        #expect([Int64].decode(postgresText: "{0,9223372036854775807,-9223372036854775807}") == [0, .max, -.max])
        #expect([Int64].decode(postgresText: "{-9223372036854775808}") == [.min])
        #expect([Int64].decode(postgresText: "{9223372036854775808}") == nil)
        #expect([Int64].decode(postgresText: #"{"7",8}"#) == [7, 8])
        for malformed in ["{1,}", "{,1}", "{-}", "{1 ,2}", "1,2", "{1,2", "{1}}"] {
            #expect([Int64].decode(postgresText: malformed) == nil, "\(malformed)")
        }
        #expect([String].decode(postgresText: "{}") == [])
    }

    @Test("bytea hex output decodes and rejects malformed text")
    func bytea() {
        #expect([UInt8].decode(postgresText: "\\x00abFF") == [0x00, 0xAB, 0xFF])
        #expect([UInt8].decode(postgresText: "\\x0") == nil)
        #expect([UInt8].decode(postgresText: "00ab") == nil)
    }

    @Test("booleans and NULL decode as Postgres prints them")
    func decodeScalars() {
        #expect(Bool.decode(postgresText: "t") == true)
        #expect(Bool.decode(postgresText: "f") == false)
        #expect(Bool.decode(postgresText: "yes") == nil)
        #expect(Double.decode(postgresText: "12.50") == 12.5)
        #expect(Int64?.postgresNull == .some(nil))
        #expect(Int64.postgresNull == nil)
    }

    @Test("COPY text escaping protects tabs, newlines and backslashes and writes NULL as \\N")
    func copyEscaping() {
        var buffer: [UInt8] = []
        CopyText.appendRow(["a\tb\nc\\d\re", nil as String?, 42, "ünï"], to: &buffer)
        #expect(String(decoding: buffer, as: UTF8.self) == "a\\tb\\nc\\\\d\\re\t\\N\t42\tünï\n")
    }

    @Test("PostgresCopyRows writes the same COPY text as boxed values, and tracks fields per row")
    func copyRows() {
        let dates = [Date(timeIntervalSince1970: 1_767_225_845.123456), Date(timeIntervalSince1970: -1.5), Date(timeIntervalSince1970: 0)]
        let values: [Int64] = [0, 7, -42, Int64.max, Int64.min]
        var rows = PostgresCopyRows()
        var expected: [UInt8] = []
        for (index, date) in dates.enumerated() {
            let text = ["a\tb\nc\\d\re", "plain", "ünï"][index]
            rows.append(text); rows.append(nil as String?); rows.append(values[index]); rows.append(date); rows.append(Int32(index))
            rows.endRow()
            CopyText.appendRow([text, nil as String?, values[index], date, Int32(index)], to: &expected)
        }
        #expect(String(decoding: rows.bytes, as: UTF8.self) == String(decoding: expected, as: UTF8.self))
        #expect(rows.count == 3 && rows.fieldsPerRow == 5)
        var extremes = PostgresCopyRows()
        extremes.append(values[3]); extremes.append(values[4]); extremes.endRow()
        #expect(String(decoding: extremes.bytes, as: UTF8.self) == "\(Int64.max)\t\(Int64.min)\n")
        extremes.append(1); extremes.endRow()
        #expect(extremes.fieldsPerRow == nil)
    }
}
