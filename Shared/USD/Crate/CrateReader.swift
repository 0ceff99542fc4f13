/// Reads a `.usdc` crate layer.
enum CrateReader {
    static func read(_ bytes: [UInt8], range: Range<Int>, identifier: String) throws -> LayerData {
        throw USDError(.unsupportedVersion, "usdc not implemented yet", context: identifier)
    }
}
