/// The `htu` comparison of RFC 9449 section 4.3: both sides normalized as RFC 3986 section 6.2.2 and 6.2.3 say,
/// without query and fragment.
enum DPoPTargetURI {
    /// `uri` normalized: scheme and host in lowercase, the scheme's default port dropped, an empty path as `/`,
    /// percent-escapes in uppercase with unreserved characters decoded, dot segments removed, and the query and
    /// fragment cut off. `nil` for anything but an absolute `http` or `https` URI with a host, or one with user
    /// information.
    static func normalize(_ uri: String) -> String? {
        let bytes = Array(uri.utf8)
        guard bytes.count <= 8 * 1024 else { return nil }
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")) else { return nil }
        let scheme = String(decoding: bytes[..<colon].map(lowercased), as: UTF8.self)
        let defaultPort: String
        switch scheme {
        case "https": defaultPort = "443"
        case "http": defaultPort = "80"
        default: return nil
        }
        var index = colon + 1
        guard bytes.count >= index + 2, bytes[index] == UInt8(ascii: "/"), bytes[index + 1] == UInt8(ascii: "/") else {
            return nil
        }
        index += 2
        let authorityStart = index
        while index < bytes.count, !isDelimiter(bytes[index]) { index += 1 }
        let authority = bytes[authorityStart..<index]
        guard !authority.contains(UInt8(ascii: "@")) else { return nil }
        // The host, then an optional port; an IPv6 literal is in brackets.
        var host: ArraySlice<UInt8>
        var port: ArraySlice<UInt8> = []
        if authority.first == UInt8(ascii: "[") {
            guard let close = authority.firstIndex(of: UInt8(ascii: "]")) else { return nil }
            host = authority[authority.startIndex...close]
            let rest = authority[(close + 1)...]
            if let first = rest.first {
                guard first == UInt8(ascii: ":") else { return nil }
                port = rest.dropFirst()
            }
        } else if let portColon = authority.firstIndex(of: UInt8(ascii: ":")) {
            host = authority[..<portColon]
            port = authority[(portColon + 1)...]
        } else {
            host = authority
        }
        guard !host.isEmpty, host.allSatisfy(isHostByte) else { return nil }
        guard port.count <= 5, port.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else {
            return nil
        }
        var portText = ""
        if !port.isEmpty {
            let number = port.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
            guard number <= 65_535 else { return nil }
            portText = String(number)
        }
        if portText == defaultPort { portText = "" }
        let pathStart = index
        while index < bytes.count, bytes[index] != UInt8(ascii: "?"), bytes[index] != UInt8(ascii: "#") {
            index += 1
        }
        guard let path = normalizePath(bytes[pathStart..<index]) else { return nil }
        var result = scheme + "://" + String(decoding: host.map(lowercased), as: UTF8.self)
        if !portText.isEmpty { result += ":" + portText }
        return result + path
    }

    /// Whether `normalize(a)` and `normalize(b)` are the same URI (`false` when either is not one).
    static func matches(_ a: String, _ b: String) -> Bool {
        guard let normalizedB = normalize(b) else { return false }
        // The same text is the same URI: the usual case, a client that sends the URI as it requested it.
        if a == b { return true }
        guard let normalizedA = normalize(a) else { return false }
        return normalizedA == normalizedB
    }

    private static func isDelimiter(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: "/") || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#")
    }

    private static func lowercased(_ byte: UInt8) -> UInt8 {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte | 0x20 : byte
    }

    /// Letters, digits, `-`, `.`, `_`, `~`, and the `[`, `]` and `:` of an IPv6 literal: no escapes in a host.
    private static func isHostByte(_ byte: UInt8) -> Bool {
        isUnreserved(byte) || byte == UInt8(ascii: "[") || byte == UInt8(ascii: "]") || byte == UInt8(ascii: ":")
    }

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
            UInt8(ascii: "~"):
            true
        default: false
        }
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// The path with escapes normalized and dot segments removed; `/` when empty; `nil` for a broken escape or a
    /// byte that may not appear in a path.
    private static func normalizePath(_ path: ArraySlice<UInt8>) -> String? {
        var normalized: [UInt8] = []
        normalized.reserveCapacity(path.count)
        var index = path.startIndex
        let hex = Array("0123456789ABCDEF".utf8)
        while index < path.endIndex {
            let byte = path[index]
            if byte == UInt8(ascii: "%") {
                guard index + 2 < path.endIndex, let high = hexValue(path[index + 1]),
                    let low = hexValue(path[index + 2])
                else { return nil }
                let decoded = high << 4 | low
                if isUnreserved(decoded) {
                    normalized.append(decoded)
                } else {
                    normalized += [UInt8(ascii: "%"), hex[Int(high)], hex[Int(low)]]
                }
                index += 3
                continue
            }
            // Visible ASCII only; spaces, controls and raw non-ASCII bytes are no part of a URI.
            guard byte > 0x20, byte < 0x7F else { return nil }
            normalized.append(byte)
            index += 1
        }
        let text = removeDotSegments(String(decoding: normalized, as: UTF8.self))
        return text.isEmpty ? "/" : text
    }

    /// RFC 3986 section 5.2.4, over `/`-separated segments.
    private static func removeDotSegments(_ path: String) -> String {
        guard path.contains(".") else { return path }
        var output: [Substring] = []
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        for (offset, segment) in segments.enumerated() {
            let isLast = offset == segments.count - 1
            switch segment {
            case ".":
                if isLast { output.append("") }
            case "..":
                if output.count > 1 { output.removeLast() }
                if isLast { output.append("") }
            default:
                output.append(segment)
            }
        }
        return output.joined(separator: "/")
    }
}
