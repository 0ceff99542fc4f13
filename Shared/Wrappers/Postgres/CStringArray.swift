import Foundation

/// Owns `strdup`ed copies of Swift strings for the duration of a C call (libpq, posix_spawn).
package struct CStringArray: ~Copyable {
    private let pointers: [UnsafeMutablePointer<CChar>?]

    package init(_ strings: [String?]) {
        pointers = strings.map { $0.flatMap { strdup($0) } }
    }

    package init(_ strings: [String]) {
        pointers = strings.map { strdup($0) }
    }

    /// Lends a NULL-terminated `const char *const *` array (NULL entries stay NULL).
    package func withPointers<R>(_ body: ([UnsafePointer<CChar>?]) -> R) -> R {
        var array = pointers.map { $0.map { UnsafePointer($0) } }
        array.append(nil)
        return body(array)
    }

    deinit {
        for pointer in pointers { free(pointer) }
    }
}
