/// The `kid` characters accepted in a token header or a key set.
enum KeyID {
    static let maximumLength = 256

    /// A non-empty string of `A-Z a-z 0-9 - _ . : + / =`, at most 256 bytes, without `..`.
    static func isValid(_ kid: String) -> Bool {
        let utf8 = kid.utf8
        guard !utf8.isEmpty, utf8.count <= maximumLength else { return false }
        var previous: UInt8 = 0
        for byte in utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: ":"),
                UInt8(ascii: "+"), UInt8(ascii: "/"), UInt8(ascii: "="):
                break
            case UInt8(ascii: "."):
                if previous == UInt8(ascii: ".") { return false }
            default:
                return false
            }
            previous = byte
        }
        return true
    }
}
