import Foundation

/// Keys and tokens minted by PyJWT (`Witnesses/supabase_tokens.py`), an implementation
/// independent of the one under test, shaped as Supabase Auth issues them: ES256 sessions
/// with `aud: authenticated`, `role: authenticated` and a uuid `sub`, the project's `anon`
/// and `service_role` keys, and the forgeries a verifier must refuse.
public struct TokenWitness: Sendable {
    /// HS256 secret of the witness's HS256 tokens (the project's legacy JWT secret).
    public static let secret = "supabase-legacy-jwt-secret-0123456789abcdef"
    public static let issuer = "https://witness.supabase.co/auth/v1"
    public static let audience = "authenticated"

    /// kid → the public JWK as JSON.
    public let keys: [String: [UInt8]]
    /// The kids of the set the services read.
    public let mainKeyIDs: [String]
    /// kid → the public key as PEM.
    public let pem: [String: String]
    /// name → compact JWS (see the script for what each one is).
    public let tokens: [String: String]

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Python with PyJWT: `PYTHON`, else the worktree's `.venv` (`deploy/test.sh` installs it
    /// there), else `python3` on the PATH.
    public static let python: String = {
        if let python = ProcessInfo.processInfo.environment["PYTHON"] { return python }
        let venv = Integration.packageRoot.appendingPathComponent(".venv/bin/python3").path
        return FileManager.default.isExecutableFile(atPath: venv) ? venv : "python3"
    }()

    /// A process running `python` with `arguments` (not started).
    public static func pythonProcess(_ arguments: [String]) -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python.hasPrefix("/") ? python : "/usr/bin/env")
        process.arguments = (python.hasPrefix("/") ? [] : [python]) + arguments
        return process
    }

    /// Whether the witness can run here. Under `deploy/test.sh` (integration enabled) the
    /// suites run anyway, so that a missing PyJWT fails them instead of skipping them.
    public static var isAvailable: Bool {
        Integration.isEnabled || (try? Integration.run(python, ["-c", "import jwt, cryptography"]).status) == 0
    }

    /// One minting per test process (RSA keys take a moment), valid for an hour from its start.
    public static func shared() throws -> TokenWitness { try minted.get() }

    private static let minted: Result<TokenWitness, Failure> = Result { () throws(Failure) in try mint(now: Date()) }

    public static func mint(now: Date) throws(Failure) -> TokenWitness {
        let script = Integration.witness("supabase_tokens.py")
        let process = pythonProcess([script, String(Int(now.timeIntervalSince1970)), secret, issuer])
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors  // PyJWT's warnings; shown only when minting fails.
        do { try process.run() } catch { throw Failure(description: "cannot run \(python): \(error)") }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        let problems = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0,
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let keys = object["keys"] as? [String: Any], let main = object["main"] as? [String],
              let pem = object["pem"] as? [String: String], let tokens = object["tokens"] as? [String: String] else {
            throw Failure(description: "the PyJWT witness failed (pip install -r deploy/requirements-test.txt): \(problems)")
        }
        var jwks: [String: [UInt8]] = [:]
        for (kid, jwk) in keys {
            guard let json = try? JSONSerialization.data(withJSONObject: jwk, options: .sortedKeys) else { continue }
            jwks[kid] = Array(json)
        }
        return TokenWitness(keys: jwks, mainKeyIDs: main, pem: pem, tokens: tokens)
    }

    /// The token named `name`.
    public func token(_ name: String) throws(Failure) -> String {
        guard let token = tokens[name] else { throw Failure(description: "the witness minted no token \(name)") }
        return token
    }

    /// The `sub` of the token named `name`: the user id the services see.
    public func subject(_ name: String) throws(Failure) -> String {
        let parts = try token(name).split(separator: ".")
        var payload = parts.count == 3 ? String(parts[1]) : ""
        payload = payload.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        payload += String(repeating: "=", count: (4 - payload.count % 4) % 4)
        guard let data = Data(base64Encoded: payload),
              let claims = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any], let subject = claims["sub"] as? String else {
            throw Failure(description: "the witness's token \(name) has no sub")
        }
        return subject
    }

    /// A JWKS document holding the keys `kids` (default: the services' set).
    public func keySet(_ kids: [String]? = nil) -> [UInt8] {
        let members = (kids ?? mainKeyIDs).compactMap { keys[$0] }
        return Array("{\"keys\":[".utf8) + Array(members.joined(separator: Array(",".utf8))) + Array("]}".utf8)
    }

    /// Writes `keySet(kids)` to a new file; its path.
    public func keySetFile(_ kids: [String]? = nil) throws -> String {
        let path = NSTemporaryDirectory() + "jwks-\(UInt32.random(in: 0...UInt32.max)).json"
        try Data(keySet(kids)).write(to: URL(fileURLWithPath: path))
        return path
    }
}
