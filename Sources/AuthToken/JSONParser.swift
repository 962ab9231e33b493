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
        var members: [String: JSONValue] = Dictionary(minimumCapacity: 16)
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
            guard members.updateValue(value, forKey: name) == nil || !rejectsDuplicateNames else {
                throw .duplicateName
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

    private mutating func parseArray(depth: Int) throws(Failure) -> JSONValue {
        guard depth <= Self.maximumDepth else { throw .tooDeep }
        index += 1  // [
        var elements: [JSONValue] = []
        skipWhitespace()
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
        // Fast path: no escapes. Eight bytes at a time while none is a quote, a backslash, a control character or
        // non-ASCII (SWAR); then byte by byte. A string found to be ASCII needs no UTF-8 validation.
        var ascii = true
        if let base = bytes.baseAddress {
            let ones: UInt64 = 0x0101_0101_0101_0101
            let highs: UInt64 = 0x8080_8080_8080_8080
            while index + 8 <= bytes.count {
                let word = UInt64(littleEndian: UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self))
                let quote = word ^ (ones &* UInt64(UInt8(ascii: "\"")))
                let backslash = word ^ (ones &* UInt64(UInt8(ascii: "\\")))
                // A byte is zero in `quote` or `backslash`, or below 0x20, or 0x80 or above, exactly when its
                // high bit is set in one of these (the classic "has zero byte" and "has byte less than" tests).
                let special =
                    ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash) | ((word &- ones &* 0x20) & ~word)
                    | word
                guard special & highs == 0 else { break }
                index += 8
            }
        }
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let slice = UnsafeBufferPointer(rebasing: bytes[start..<index])
                index += 1
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
        if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
        // Integer part: 0, or a non-zero digit followed by digits.
        guard index < bytes.count, isDigit(bytes[index]) else { throw .invalid }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else {
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
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
        let slice = UnsafeBufferPointer(rebasing: bytes[start..<index])
        if isInteger, slice.count <= 18 {
            var value = 0
            var negative = false
            for byte in slice {
                if byte == UInt8(ascii: "-") {
                    negative = true
                } else {
                    value = value &* 10 &+ Int(byte &- UInt8(ascii: "0"))
                }
            }
            return .integer(negative ? -value : value)
        }
        // The grammar above has already rejected NaN, Infinity and anything else Double(_:) might accept.
        guard let value = Double(String(decoding: slice, as: UTF8.self)) else { throw .invalid }
        return .number(value)
    }

    private func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }
}
