/// Texture files reached from a prim's material binding.
public enum MaterialTextures {
    /// Textures of the material bound to the prim (its own binding, else the nearest
    /// ancestor's for gprims), plus those bound to its GeomSubsets; sorted package paths.
    public static func textures(for prim: USDPrim, in stage: USDStage) -> [String] {
        var bindings: [String] = []
        if let own = prim.relationships["material:binding"]?.first {
            bindings.append(own)
        } else if prim.isBoundable {
            var ancestor = prim.parent
            while let current = ancestor {
                if let target = current.relationships["material:binding"]?.first {
                    bindings.append(target)
                    break
                }
                ancestor = current.parent
            }
        }
        for child in prim.children where child.typeName == "GeomSubset" {
            if let target = child.relationships["material:binding"]?.first { bindings.append(target) }
        }
        var textures = Set<String>()
        for target in bindings {
            guard let material = stage.prim(at: target) else { continue }
            collect(material, into: &textures, depth: 0)
        }
        return textures.sorted()
    }

    private static func collect(_ prim: USDPrim, into textures: inout Set<String>, depth: Int) {
        guard depth < 64 else { return }
        let table = prim.table
        for attribute in table.attributes(prim.row) where table.attributeName(attribute).hasPrefix("inputs:") {
            if case .asset(let path) = table.value(of: attribute), !path.isEmpty { textures.insert(path) }
        }
        for child in prim.children { collect(child, into: &textures, depth: depth + 1) }
    }
}
