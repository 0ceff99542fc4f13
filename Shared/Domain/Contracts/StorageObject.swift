/// `POST /storage/v1/object/sign/rooms/{path}` body: Supabase Storage's `createSignedUrl`
/// (`{"expiresIn": seconds}`; the Python client sends the number as a string, so both are read).
public struct StorageSignRequest: Sendable, Hashable, Codable {
    public var expiresIn: Int

    public init(expiresIn: Int) { self.expiresIn = expiresIn }

    enum CodingKeys: String, CodingKey { case expiresIn }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        if let seconds = try? container.decode(Int.self, forKey: .expiresIn) {
            expiresIn = seconds
        } else if let text = try? container.decode(String.self, forKey: .expiresIn), let seconds = Int(text) {
            expiresIn = seconds
        } else {
            throw DecodingError.dataCorruptedError(forKey: .expiresIn, in: container,
                                                   debugDescription: "expiresIn must be a whole number of seconds")
        }
    }
}

/// `POST /storage/v1/object/sign/rooms/{path}` 200 body, as Supabase Storage answers it: the
/// signed path relative to `/storage/v1` (`/object/sign/rooms/{path}?token=…`), which the
/// clients append to their storage URL.
public struct StorageSignedURL: Sendable, Hashable, Codable {
    public var signedURL: String

    public init(signedURL: String) { self.signedURL = signedURL }
}
