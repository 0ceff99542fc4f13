/// Loads and caches the layers of a package, text or crate, by their entry path.
final class LayerLoader {
    private(set) var package: USDZPackage
    private var cache: [String: LayerData] = [:]
    private var failed: Set<String> = []

    init(package: USDZPackage) {
        self.package = package
    }

    func report(_ finding: ValidationFinding) { package.addFinding(finding) }

    /// Parses the layer at an entry path, or returns nil after reporting why not.
    func layer(at path: String) -> LayerData? {
        if let cached = cache[path] { return cached }
        if failed.contains(path) { return nil }
        do {
            let layer = try load(path)
            cache[path] = layer
            for construct in layer.unsupported {
                report(ValidationFinding(.unsupportedConstruct, .warning, "\(path): \(construct) not supported; ignored"))
            }
            return layer
        } catch let error as USDError {
            failed.insert(path)
            report(ValidationFinding(.unreadableLayer, .error, error.description))
            return nil
        } catch {
            failed.insert(path)
            report(ValidationFinding(.unreadableLayer, .error, "\(path): \(error)"))
            return nil
        }
    }

    /// Parses the root layer, throwing its error.
    func rootLayer() throws -> LayerData {
        let path = package.rootLayerPath
        let layer = try load(path)
        cache[path] = layer
        for construct in layer.unsupported {
            report(ValidationFinding(.unsupportedConstruct, .warning, "\(path): \(construct) not supported; ignored"))
        }
        return layer
    }

    private func load(_ path: String) throws -> LayerData {
        guard let entry = package.entry(path) else {
            throw USDError(.invalidPackage, "no readable entry '\(path)' in the package", context: path)
        }
        let bytes = package.data(of: entry)
        if bytes.starts(with: Array("PXR-USDC".utf8)) {
            return try CrateReader.read(package.bytes, range: entry.dataOffset..<(entry.dataOffset + entry.size),
                                        identifier: path)
        }
        if bytes.starts(with: Array("#usda".utf8)) {
            return try USDAParser.parse(bytes, identifier: path)
        }
        throw USDError(.badMagic, "layer is neither usda nor usdc", context: "\(path) offset 0")
    }
}
