import JSON

/// A minimal JSON tree with a deterministic serialiser (object keys keep their order).
enum JSONValue {
    case null
    case bool(Bool)
    case number(Double)
    case int(Int)
    case string(String)
    case array([JSONValue])
    case object([(String, JSONValue)])

    func write(to out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let value): out += value ? "true" : "false"
        case .int(let value): out += String(value)
        case .number(let value):
            if value.isFinite {
                out += value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : "\(value)"
            } else {
                out += "null"
            }
        case .string(let value): JSONValue.writeString(value, to: &out)
        case .array(let values):
            out += "["
            for (index, value) in values.enumerated() {
                if index > 0 { out += "," }
                value.write(to: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (index, member) in members.enumerated() {
                if index > 0 { out += "," }
                JSONValue.writeString(member.0, to: &out)
                out += ":"
                member.1.write(to: &out)
            }
            out += "}"
        }
    }

    static func writeString(_ value: String, to out: inout String) {
        out += JSONString.quote(value)
    }

    var text: String {
        var out = ""
        write(to: &out)
        return out
    }
}
