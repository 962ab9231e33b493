/// A small, strict JSON parser (RFC 8259) over UTF-8 bytes, made for JWT headers and payloads.
///
/// Foundation's `JSONSerialization` costs several microseconds per token and bridges every value; this
/// reads the bytes once, validates UTF-8 per string, and bounds nesting so no input can exhaust the stack.
///
/// Claims read for scheduling let the last of two equal names win, as RFC 7519 allows a reader to; a verifier
/// (TokenVerification) refuses duplicate names, as RFC 7515 section 5.2 asks, so that two readers never see two
/// different `alg`s or `exp`s.
package struct JSONParser {
    /// Objects and arrays may nest this deep; JWT claims rarely nest more than three levels.
    static let maximumDepth = 64

    private let bytes: UnsafeBufferPointer<UInt8>
    private var index = 0

    private var rejectsDuplicateNames = false

    /// Why parsing failed.
    package enum Failure: Error { case invalid, tooDeep, duplicateName }

    /// Parses `bytes` as one JSON value with nothing but whitespace around it.
    ///
    /// - Parameters:
    ///   - bytes: The UTF-8 text.
    ///   - rejectingDuplicateNames: Whether an object with two equal member names is refused
    ///     (``Failure/duplicateName``) instead of keeping the last.
    package static func parse(
        _ bytes: UnsafeBufferPointer<UInt8>, rejectingDuplicateNames: Bool = false
    ) throws(Failure) -> JSONValue {
        var parser = JSONParser(bytes: bytes)
        parser.rejectsDuplicateNames = rejectingDuplicateNames
        parser.skipWhitespace()
        let value = try parser.parseValue(depth: 0)
        parser.skipWhitespace()
        guard parser.index == bytes.count else { throw .invalid }
        return value
    }

    private init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    /// Scans `bytes` as one JSON object and returns where each member's name and value lie in it, building no value:
    /// no dictionary, no hashed name, no string. It accepts exactly the objects ``parse(_:rejectingDuplicateNames:)``
    /// accepts (two equal names are both listed; the last wins when read), and refuses everything else, objects
    /// nested too deep included, so a caller that needs the reason for a refusal asks ``parse(_:rejectingDuplicateNames:)``.
    ///
    /// - Parameter bytes: The UTF-8 text.
    /// - Returns: The members, in the order of the text.
    static func scanObject(_ bytes: UnsafeBufferPointer<UInt8>) throws(Failure) -> [JSONObjectText.Member] {
        var parser = JSONParser(bytes: bytes)
        parser.skipWhitespace()
        guard parser.index < bytes.count, bytes[parser.index] == UInt8(ascii: "{") else { throw .invalid }
        let members = try parser.scanMembers()
        parser.skipWhitespace()
        guard parser.index == bytes.count else { throw .invalid }
        return members
    }

    /// The members of the top-level object, its `{` next; as ``parseObject(depth:)`` at depth 1, keeping places.
    private mutating func scanMembers() throws(Failure) -> [JSONObjectText.Member] {
        index += 1  // {
        var members: [JSONObjectText.Member] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return members
        }
        members.reserveCapacity(max(4, bytes.count / 24))
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw .invalid }
            let nameStart = index
            let name = try skipString()
            let nameEnd = index
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw .invalid }
            index += 1
            skipWhitespace()
            let valueStart = index
            try skipValue(depth: 1)
            members.append(
                JSONObjectText.Member(
                    nameStart: Int32(truncatingIfNeeded: nameStart), nameEnd: Int32(truncatingIfNeeded: nameEnd),
                    valueStart: Int32(truncatingIfNeeded: valueStart), valueEnd: Int32(truncatingIfNeeded: index),
                    nameIsUnescaped: name.unescaped, nameIsASCII: name.ascii))
            skipWhitespace()
            guard index < bytes.count else { throw .invalid }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            guard bytes[index] == UInt8(ascii: "}") else { throw .invalid }
            index += 1
            return members
        }
    }

    /// Validates one value as ``parseValue(depth:)`` does and steps over it.
    private mutating func skipValue(depth: Int) throws(Failure) {
        guard index < bytes.count else { throw .invalid }
        switch bytes[index] {
        case UInt8(ascii: "{"): try skipObject(depth: depth + 1)
        case UInt8(ascii: "["): try skipArray(depth: depth + 1)
        case UInt8(ascii: "\""): _ = try skipString()
        case UInt8(ascii: "t"): try expectLiteral("true")
        case UInt8(ascii: "f"): try expectLiteral("false")
        case UInt8(ascii: "n"): try expectLiteral("null")
        default: _ = try parseNumber()
        }
    }

    /// Validates an object as ``parseObject(depth:)`` does (two equal names allowed) and steps over it.
    private mutating func skipObject(depth: Int) throws(Failure) {
        guard depth <= Self.maximumDepth else { throw .tooDeep }
        index += 1  // {
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw .invalid }
            _ = try skipString()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw .invalid }
            index += 1
            skipWhitespace()
            try skipValue(depth: depth)
            skipWhitespace()
            guard index < bytes.count else { throw .invalid }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            guard bytes[index] == UInt8(ascii: "}") else { throw .invalid }
            index += 1
            return
        }
    }

    /// Validates an array as ``parseArray(depth:)`` does and steps over it.
    private mutating func skipArray(depth: Int) throws(Failure) {
        guard depth <= Self.maximumDepth else { throw .tooDeep }
        index += 1  // [
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return
        }
        while true {
            skipWhitespace()
            try skipValue(depth: depth)
            skipWhitespace()
            guard index < bytes.count else { throw .invalid }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            guard bytes[index] == UInt8(ascii: "]") else { throw .invalid }
            index += 1
            return
        }
    }

    /// Validates a string as ``parseString()`` does and steps over it, making no `String` unless it has escapes.
    ///
    /// - Returns: Whether the string has no escape, and whether its text is ASCII (meaningful without escapes).
    private mutating func skipString() throws(Failure) -> (unescaped: Bool, ascii: Bool) {
        let quote = index
        index += 1  // opening quote
        let start = index
        var ascii = true
        skipPlainWords()
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let slice = UnsafeBufferPointer(rebasing: bytes[start..<index])
                index += 1
                guard ascii || UTF8Validation.isValid(slice) else { throw .invalid }
                return (true, ascii)
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw .invalid }
            if byte >= 0x80 { ascii = false }
            index += 1
        }
        // An escape (or no closing quote): the full reader unescapes and validates it.
        index = quote
        _ = try parseString()
        return (false, false)
    }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private mutating func parseValue(depth: Int) throws(Failure) -> JSONValue {
        guard index < bytes.count else { throw .invalid }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject(depth: depth + 1)
        case UInt8(ascii: "["): return try parseArray(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"):
            try expectLiteral("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expectLiteral("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expectLiteral("null")
            return .null
        default: return try parseNumber()
        }
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(Failure) {
        let count = literal.utf8CodeUnitCount
        guard bytes.count - index >= count else { throw .invalid }
        let start = literal.utf8Start
        for offset in 0..<count where bytes[index + offset] != start[offset] { throw .invalid }
        index += count
    }

    private mutating func parseObject(depth: Int) throws(Failure) -> JSONValue {
        guard depth <= Self.maximumDepth else { throw .tooDeep }
        index += 1  // {
        var members = Self.emptyObject(forAbout: depth == 1 ? bytes.count / 24 : 0)
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw .invalid }
            let name = try parseString()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw .invalid }
            index += 1
            skipWhitespace()
            let value = try parseValue(depth: depth)
            if rejectsDuplicateNames {
                guard members.updateValue(value, forKey: name) == nil else { throw .duplicateName }
            } else {
                members[name] = value
            }
            skipWhitespace()
            guard index < bytes.count else { throw .invalid }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            guard bytes[index] == UInt8(ascii: "}") else { throw .invalid }
            index += 1
            return .object(members)
        }
    }

    /// Empty tables with room for 6, 12, 24, 48 and 96 members. A parse copies one on its first insert: the copy
    /// is made by the table type itself, while `Dictionary(minimumCapacity:)` looks the type's generic metadata up
    /// in the runtime on every call (about 340 instructions, a sixtieth of a parse).
    private static let emptyObjects: [[String: JSONValue]] = [6, 12, 24, 48, 96].map {
        Dictionary(minimumCapacity: $0)
    }

    /// An empty table with room for about `expected` members (at least 6: a smaller table fills and its lookups
    /// collide), so that it is neither grown nor oversized: the top-level object holds about one member per 24 bytes
    /// of text (a JWT header 3 or 4, a payload of 300 bytes 12); a table of 32 buckets or more also leaves the
    /// allocator's fast path (over 1 KiB).
    private static func emptyObject(forAbout expected: Int) -> [String: JSONValue] {
        var index = 0
        var room = 6
        while room < expected, index < 4 {
            room *= 2
            index += 1
        }
        return emptyObjects[index]
    }

    private mutating func parseArray(depth: Int) throws(Failure) -> JSONValue {
        guard depth <= Self.maximumDepth else { throw .tooDeep }
        index += 1  // [
        var elements: [JSONValue] = []
        skipWhitespace()
        // Room for a short array (an `aud` of a few audiences) in one allocation, not two.
        if index < bytes.count, bytes[index] != UInt8(ascii: "]") { elements.reserveCapacity(4) }
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try parseValue(depth: depth))
            skipWhitespace()
            guard index < bytes.count else { throw .invalid }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            guard bytes[index] == UInt8(ascii: "]") else { throw .invalid }
            index += 1
            return .array(elements)
        }
    }

    private mutating func parseString() throws(Failure) -> String {
        index += 1  // opening quote
        let start = index
        // Fast path: no escapes. Eight bytes at a time, then byte by byte. A string found to be ASCII needs no UTF-8
        // validation.
        var ascii = true
        skipPlainWords()
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let slice = UnsafeBufferPointer(rebasing: bytes[start..<index])
                index += 1
                if ascii, let known = Self.knownString(slice, in: bytes) { return known }
                guard ascii || UTF8Validation.isValid(slice) else { throw .invalid }
                return String(decoding: slice, as: UTF8.self)
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw .invalid }
            if byte >= 0x80 { ascii = false }
            index += 1
        }
        // Slow path: unescape into a buffer.
        var buffer = [UInt8](bytes[start..<index])
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                guard buffer.withUnsafeBufferPointer({ UTF8Validation.isValid($0) }) else { throw .invalid }
                return String(decoding: buffer, as: UTF8.self)
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { throw .invalid }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): buffer.append(escape)
                case UInt8(ascii: "b"): buffer.append(0x08)
                case UInt8(ascii: "f"): buffer.append(0x0C)
                case UInt8(ascii: "n"): buffer.append(0x0A)
                case UInt8(ascii: "r"): buffer.append(0x0D)
                case UInt8(ascii: "t"): buffer.append(0x09)
                case UInt8(ascii: "u"): try appendUnicodeEscape(to: &buffer)
                default: throw .invalid
                }
            default:
                if byte < 0x20 { throw .invalid }
                buffer.append(byte)
                index += 1
            }
        }
        throw .invalid
    }

    /// Steps over eight bytes at a time while none is a quote, a backslash, a control character or non-ASCII (SWAR),
    /// stopping at the word that holds the first such byte, on that byte. What it steps over is ASCII.
    private mutating func skipPlainWords() {
        if let base = bytes.baseAddress {
            let ones: UInt64 = 0x0101_0101_0101_0101
            let highs: UInt64 = 0x8080_8080_8080_8080
            while index + 8 <= bytes.count {
                let word = UInt64(littleEndian: UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self))
                let quote = word ^ (ones &* UInt64(UInt8(ascii: "\"")))
                let backslash = word ^ (ones &* UInt64(UInt8(ascii: "\\")))
                // A byte is zero in `quote` or `backslash`, or below 0x20, or 0x80 or above, exactly when its
                // high bit is set in one of these (the classic "has zero byte" and "has byte less than" tests).
                // Borrows can flag bytes above a flagged one, never below: the lowest flag is a true one.
                let special =
                    (((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash) | ((word &- ones &* 0x20) & ~word)
                        | word) & highs
                guard special == 0 else {
                    index += special.trailingZeroBitCount >> 3
                    break
                }
                index += 8
            }
        }
    }

    /// The names and values that JWTs carry everywhere (registered header parameters and claims, algorithm names),
    /// as literals: a string read from a token that equals one of these needs no validation, copy or allocation.
    ///
    /// - Parameters:
    ///   - slice: ASCII bytes with no escapes.
    ///   - bytes: The whole text `slice` lies in (a word may be read past the slice's end, within it).
    /// - Returns: The literal, or `nil` when `slice` is not one of them.
    private static func knownString(
        _ slice: UnsafeBufferPointer<UInt8>, in bytes: UnsafeBufferPointer<UInt8>
    ) -> String? {
        let count = slice.count
        guard count > 0, count <= 8, let base = slice.baseAddress, let end = bytes.baseAddress.map({ $0 + bytes.count })
        else { return nil }
        // The bytes, first byte lowest; below eight bytes the length is in the top byte, so no two keys collide.
        var key: UInt64
        if end - base >= 8 {
            key = UInt64(littleEndian: UnsafeRawPointer(base).loadUnaligned(as: UInt64.self))
            if count < 8 { key &= (1 << (count * 8)) - 1 }
        } else {
            key = 0
            for (offset, byte) in slice.enumerated() { key |= UInt64(byte) << (offset * 8) }
        }
        if count < 8 { key |= UInt64(count) << 56 }
        return switch key {
        case 0x300_0000_0054_574a: "JWT"
        case 0x300_0000_0062_7573: "sub"
        case 0x300_0000_0063_3578: "x5c"
        case 0x300_0000_0063_6e65: "enc"
        case 0x300_0000_0064_6963: "cid"
        case 0x300_0000_0064_696b: "kid"
        case 0x300_0000_0064_696f: "oid"
        case 0x300_0000_0064_6973: "sid"
        case 0x300_0000_0064_6974: "tid"
        case 0x300_0000_0064_6975: "uid"
        case 0x300_0000_0064_7561: "aud"
        case 0x300_0000_0066_626e: "nbf"
        case 0x300_0000_0067_6c61: "alg"
        case 0x300_0000_0069_746a: "jti"
        case 0x300_0000_006b_776a: "jwk"
        case 0x300_0000_0070_6373: "scp"
        case 0x300_0000_0070_697a: "zip"
        case 0x300_0000_0070_7865: "exp"
        case 0x300_0000_0070_7974: "typ"
        case 0x300_0000_0070_7a61: "azp"
        case 0x300_0000_0072_6361: "acr"
        case 0x300_0000_0072_6576: "ver"
        case 0x300_0000_0072_6d61: "amr"
        case 0x300_0000_0073_7369: "iss"
        case 0x300_0000_0074_3578: "x5t"
        case 0x300_0000_0074_6169: "iat"
        case 0x300_0000_0075_3578: "x5u"
        case 0x300_0000_0075_6b6a: "jku"
        case 0x300_0000_0079_7463: "cty"
        case 0x400_0000_656d_616e: "name"
        case 0x400_0000_656e_6f6e: "none"
        case 0x400_0000_7469_7263: "crit"
        case 0x500_0032_3135_5345: "ES512"
        case 0x500_0032_3135_5348: "HS512"
        case 0x500_0032_3135_5350: "PS512"
        case 0x500_0032_3135_5352: "RS512"
        case 0x500_0034_3833_5345: "ES384"
        case 0x500_0034_3833_5348: "HS384"
        case 0x500_0034_3833_5350: "PS384"
        case 0x500_0034_3833_5352: "RS384"
        case 0x500_0036_3532_5345: "ES256"
        case 0x500_0036_3532_5348: "HS256"
        case 0x500_0036_3532_5350: "PS256"
        case 0x500_0036_3532_5352: "RS256"
        case 0x500_0041_5344_6445: "EdDSA"
        case 0x500_0065_636e_6f6e: "nonce"
        case 0x500_0065_706f_6373: "scope"
        case 0x500_006c_6961_6d65: "email"
        case 0x500_0073_656c_6f72: "roles"
        case 0x600_4b36_3532_5345: "ES256K"
        case 0x600_6873_6168_5f63: "c_hash"
        case 0x600_7370_756f_7267: "groups"
        case 0x600_7477_6a2b_7461: "at+jwt"
        case 0x768_7361_685f_7461: "at_hash"
        case 0x3635_3253_2374_3578: "x5t#S256"
        default: nil
        }
    }

    private mutating func readHex4() throws(Failure) -> UInt32 {
        guard bytes.count - index >= 4 else { throw .invalid }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw .invalid
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }

    private mutating func appendUnicodeEscape(to buffer: inout [UInt8]) throws(Failure) {
        var scalar = try readHex4()
        if (0xD800...0xDBFF).contains(scalar) {
            // A high surrogate must be followed by an escaped low surrogate.
            guard bytes.count - index >= 6, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
            else { throw .invalid }
            index += 2
            let low = try readHex4()
            guard (0xDC00...0xDFFF).contains(low) else { throw .invalid }
            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
        } else if (0xDC00...0xDFFF).contains(scalar) {
            throw .invalid
        }
        guard let unicode = Unicode.Scalar(scalar) else { throw .invalid }
        buffer.append(contentsOf: UTF8.encode(unicode)!)
    }

    private mutating func parseNumber() throws(Failure) -> JSONValue {
        let start = index
        var isInteger = true
        var negative = false
        if index < bytes.count, bytes[index] == UInt8(ascii: "-") {
            negative = true
            index += 1
        }
        // Integer part: 0, or a non-zero digit followed by digits; accumulated as it is read (wrapping: used only
        // when it has at most 18 characters).
        guard index < bytes.count, isDigit(bytes[index]) else { throw .invalid }
        var value = 0
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else {
            while index < bytes.count, isDigit(bytes[index]) {
                value = value &* 10 &+ Int(bytes[index] &- UInt8(ascii: "0"))
                index += 1
            }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else { throw .invalid }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            guard index < bytes.count, isDigit(bytes[index]) else { throw .invalid }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if isInteger, index - start <= 18 { return .integer(negative ? -value : value) }
        let slice = UnsafeBufferPointer(rebasing: bytes[start..<index])
        // The grammar above has already rejected NaN, Infinity and anything else Double(_:) might accept.
        guard let value = Double(String(decoding: slice, as: UTF8.self)) else { throw .invalid }
        return .number(value)
    }

    private func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }
}
