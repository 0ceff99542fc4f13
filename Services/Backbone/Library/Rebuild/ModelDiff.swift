import Foundation
import Postgres

/// How a live read model differs from its shadow, table by table, row by row (by primary
/// key): rows the rebuild would add (in the shadow only), remove (in the live table only)
/// and change (in both, with other values). Columns the database fills with the clock when
/// a row is written (`DEFAULT now()`: `updated_at`, `projected_at`, `applied_at`) say when,
/// not what, and are not compared.
struct ModelDiff {
    struct Row {
        var change: String
        /// The primary key as a JSON object.
        var key: String
        /// The differing columns as a JSON array (changed rows).
        var columns: String
    }

    struct Table {
        var name: String
        var added = 0
        var removed = 0
        var changed = 0
        /// Up to the limit, in key order.
        var rows: [Row] = []
        var total: Int { added + removed + changed }
    }

    var tables: [Table]
    var isEmpty: Bool { tables.allSatisfy { $0.total == 0 } }

    /// Compares `live.table` with `shadow.table` for every table, on `connection` (inside
    /// the caller's snapshot).
    static func compute(tables: [String], live: String, shadow: String, rowLimit: Int,
                        in connection: PostgresConnection) async throws -> ModelDiff {
        var result: [Table] = []
        for table in tables {
            let columns = try await connection.query("""
                SELECT a.attname, EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = a.attrelid AND i.indisprimary
                                                                   AND a.attnum = ANY (i.indkey)) AS is_key,
                       COALESCE(pg_get_expr(d.adbin, d.adrelid), '') AS default_value
                FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
                WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped
                ORDER BY a.attnum
                """, ["\(shadow).\(ShadowModel.quote(table))"])
            var keys: [String] = [], compared: [String] = []
            for row in columns {
                let name = try row.decode(String.self, "attname")
                if try row.decode(Bool.self, "is_key") {
                    keys.append(name)
                } else if try row.decode(String.self, "default_value") != "now()" {
                    compared.append(name)
                }
            }
            guard !keys.isEmpty else { continue }
            result.append(try await diff(table: table, keys: keys, compared: compared, live: live, shadow: shadow,
                                         rowLimit: rowLimit, in: connection))
        }
        return ModelDiff(tables: result)
    }

    static func diff(table: String, keys: [String], compared: [String], live: String, shadow: String, rowLimit: Int,
                     in connection: PostgresConnection) async throws -> Table {
        let q = ShadowModel.quote
        let join = keys.map { "l.\(q($0)) = s.\(q($0))" }.joined(separator: " AND ")
        let firstKey = q(keys[0])
        let distinct = compared.isEmpty ? "false"
            : "ROW(\(compared.map { "l.\(q($0))" }.joined(separator: ", "))) IS DISTINCT FROM ROW(\(compared.map { "s.\(q($0))" }.joined(separator: ", ")))"
        let changedColumns = compared.isEmpty ? "'[]'"
            : "array_to_json(array_remove(ARRAY[\(compared.map { "CASE WHEN l.\(q($0)) IS DISTINCT FROM s.\(q($0)) THEN \(literal($0)) END" }.joined(separator: ", "))]::text[], NULL))::text"
        let keyObject = "json_build_object(\(keys.map { "\(literal($0)), COALESCE(s.\(q($0)), l.\(q($0)))" }.joined(separator: ", ")))::text"
        let differences = """
            SELECT CASE WHEN l.\(firstKey) IS NULL THEN 'added' WHEN s.\(firstKey) IS NULL THEN 'removed' ELSE 'changed' END AS change,
                   \(keyObject) AS key, \(changedColumns) AS columns,
                   \(keys.map { "COALESCE(s.\(q($0)), l.\(q($0)))" }.joined(separator: ", "))
            FROM \(live).\(q(table)) l FULL JOIN \(shadow).\(q(table)) s ON \(join)
            WHERE l.\(firstKey) IS NULL OR s.\(firstKey) IS NULL OR \(distinct)
            """
        var result = Table(name: table)
        for row in try await connection.query("SELECT change, count(*) AS n FROM (\(differences)) d GROUP BY change") {
            let count = Int(try row.decode(Int64.self, "n"))
            switch try row.decode(String.self, "change") {
            case "added": result.added = count
            case "removed": result.removed = count
            default: result.changed = count
            }
        }
        guard result.total > 0, rowLimit > 0 else { return result }
        let ordering = (0..<keys.count).map { String($0 + 4) }.joined(separator: ", ")
        for row in try await connection.query("\(differences) ORDER BY \(ordering) LIMIT \(rowLimit)") {
            result.rows.append(Row(change: try row.decode(String.self, "change"), key: try row.decode(String.self, "key"),
                                   columns: try row.decode(String.self, "columns")))
        }
        return result
    }

    static func literal(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "''") + "'" }
}
