import Foundation

/// `application/x-www-form-urlencoded` encoding, as the WHATWG URL Standard's urlencoded serializer writes it (the
/// encoding RFC 6749 appendix B asks for): ASCII letters, digits, `*`, `-`, `.` and `_` stay, a space is `+`, every
/// other byte of the UTF-8 (`~` included) is `%XX`.
package enum FormEncoding {
    private static let digits = Array("0123456789ABCDEF".unicodeScalars)

    /// Encodes the pairs as a form body.
    package static func encode(_ pairs: [(String, String)]) -> String {
        pairs.map { encode($0.0) + "=" + encode($0.1) }.joined(separator: "&")
    }

    /// Encodes an ID or secret for HTTP Basic client authentication (RFC 6749 section 2.3.1), or a URL query's name
    /// or value: form encoding with a space as `%20`, which form decoding reads as a space too, while servers that
    /// decode by RFC 3986 rules would keep a `+` (and refuse the secret). A literal `+` is `%2B` either way.
    package static func basicEncode(_ text: String) -> String {
        encode(text).replacingOccurrences(of: "+", with: "%20")
    }

    /// Encodes one name or value: letters, digits and `*-._` stay, a space becomes `+`, the rest `%XX`.
    package static func encode(_ text: String) -> String {
        var result = ""
        result.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "*"):
                result.unicodeScalars.append(Unicode.Scalar(byte))
            case UInt8(ascii: " "):
                result.append("+")
            default:
                result.unicodeScalars.append("%")
                result.unicodeScalars.append(digits[Int(byte >> 4)])
                result.unicodeScalars.append(digits[Int(byte & 0x0F)])
            }
        }
        return result
    }
}
