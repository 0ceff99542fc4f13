/// Error codes of the room catalog (`GET /rest/v1/rooms`, `GET /rest/v1/room_versions`), the
/// PostgREST subset the CrowdRoom app reads (seed `002_*` §2.2 Flow B, §6.2, R-iOS-5).
extension ErrorCode {
    /// A PostgREST operator the catalog does not answer (`not.`, `fts`, `gt` on a column that has no range…).
    public static let unsupportedOperator: ErrorCode = "UNSUPPORTED_OPERATOR"
    /// A column the resource does not have or does not filter on.
    public static let unsupportedColumn: ErrorCode = "UNSUPPORTED_COLUMN"
    /// A `select` beyond columns, `*` and the embedded versions.
    public static let unsupportedSelect: ErrorCode = "UNSUPPORTED_SELECT"
    /// An `order` on a column or with a modifier the catalog does not answer.
    public static let unsupportedOrder: ErrorCode = "UNSUPPORTED_ORDER"
    /// A parameter outside the subset (`or`, `and`, `on_conflict`…), or a method other than GET.
    public static let unsupportedParameter: ErrorCode = "UNSUPPORTED_PARAMETER"
    /// `Accept: application/vnd.pgrst.object+json` (a client's `.single()`) when the answer is not one row.
    public static let notSingleRow: ErrorCode = "NOT_SINGLE_ROW"
}
