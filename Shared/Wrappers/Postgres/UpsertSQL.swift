/// Pieces of `INSERT … ON CONFLICT DO UPDATE` statements.
public enum UpsertSQL {
    /// `column = CASE WHEN condition THEN EXCLUDED.column ELSE existing.column END` for each
    /// column, one per line, each followed by a comma: the incoming row's values where
    /// `condition` says it wins (a newer position, a newer status), the stored ones elsewhere.
    public static func taking(_ columns: [String], when condition: String, existing alias: String) -> String {
        columns.map { "\($0) = CASE WHEN \(condition) THEN EXCLUDED.\($0) ELSE \(alias).\($0) END," }.joined(separator: "\n")
    }
}
