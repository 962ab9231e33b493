/// A JSON object kept as its UTF-8 text, with where each member's name and value lie in it.
///
/// Made by one validating scan (``JSONParser/scanObject(_:)``): a JWT's header and claims are read this way, so a
/// parse makes no dictionary, hashes no name and allocates no string. A value is parsed when it is read; names are
/// compared as bytes (as strings when either side is not plain ASCII, so that canonically equivalent names match as
/// they do in a `Dictionary`). When a name repeats, the last member wins, as in ``JSONParser``'s objects.
///
/// Two texts are equal when their bytes are: the members follow from the bytes.
struct JSONObjectText: Sendable, Hashable {
    /// Where one member lies in ``bytes``.
    struct Member: Sendable, Hashable {
        /// The name's opening quote.
        let nameStart: Int32
        /// Just after the name's closing quote.
        let nameEnd: Int32
        /// The value's first byte.
        let valueStart: Int32
        /// Just after the value's last byte.
        let valueEnd: Int32
        /// Whether the name has no escape (its bytes between the quotes are its UTF-8).
        let nameIsUnescaped: Bool
        /// Whether the name's bytes are ASCII (meaningful only when it has no escape).
        let nameIsASCII: Bool
    }

    /// The object's UTF-8 text.
    let bytes: [UInt8]
    /// Its members, in the order of the text.
    let members: [Member]
    /// The names that hold an escape or a byte outside ASCII, decoded once when the text is made, by their member's
    /// index: a lookup compares them as strings without parsing the name again. Empty for the usual object, whose
    /// names are plain ASCII.
    let decodedNames: [Int: String]

    /// Keeps `bytes` and the members a scan found in them, and decodes the names that need it.
    ///
    /// - Parameters:
    ///   - bytes: The object's UTF-8 text.
    ///   - members: Where each member lies in `bytes`, as ``JSONParser/scanObject(_:)`` found them.
    init(bytes: [UInt8], members: [Member]) {
        self.bytes = bytes
        self.members = members
        var decoded: [Int: String] = [:]
        for index in members.indices where !members[index].nameIsUnescaped || !members[index].nameIsASCII {
            let member = members[index]
            let name = bytes.withUnsafeBufferPointer { text in
                try? JSONParser.parse(UnsafeBufferPointer(rebasing: text[Int(member.nameStart)..<Int(member.nameEnd)]))
            }
            if case .string(let name) = name { decoded[index] = name }
        }
        decodedNames = decoded
    }

    static func == (lhs: Self, rhs: Self) -> Bool { lhs.bytes == rhs.bytes }

    func hash(into hasher: inout Hasher) { hasher.combine(bytes) }

    /// Every member by name, parsed from the text (the last of two equal names wins).
    var dictionary: [String: JSONValue] {
        let parsed = bytes.withUnsafeBufferPointer { try? JSONParser.parse($0) }
        guard case .object(let members) = parsed else { return [:] }
        return members
    }

    /// The value of the member called `name`, or `nil` when there is none.
    ///
    /// - Parameter name: The member's name.
    /// - Returns: The value, parsed from the text.
    func value(named name: String) -> JSONValue? {
        bytes.withUnsafeBufferPointer { text in
            guard let member = Self.member(named: name, in: members, decodedNames: decodedNames, text: text) else {
                return nil
            }
            return try? JSONParser.parse(
                UnsafeBufferPointer(rebasing: text[Int(member.valueStart)..<Int(member.valueEnd)]))
        }
    }

    /// The last member called `name`.
    private static func member(
        named name: String, in members: [Member], decodedNames: [Int: String], text: UnsafeBufferPointer<UInt8>
    ) -> Member? {
        var utf8 = name
        return utf8.withUTF8 { query in
            var queryIsASCII = true
            for byte in query where byte >= 0x80 { queryIsASCII = false }
            var index = members.count
            while index > 0 {
                index -= 1
                let member = members[index]
                let start = Int(member.nameStart) + 1
                let end = Int(member.nameEnd) - 1
                if member.nameIsUnescaped {
                    if end - start == query.count, equal(text, from: start, query) { return member }
                    // Different bytes: different names, unless one side may have another canonical form.
                    if member.nameIsASCII, queryIsASCII { continue }
                }
                // A plain name is its bytes (compared as a string here only when the query is not plain ASCII).
                let other = decodedNames[index] ?? String(decoding: text[start..<end], as: UTF8.self)
                if other == name { return member }
            }
            return nil
        }
    }

    /// Whether `text` holds `query`'s bytes from `start` on (`text` is long enough).
    private static func equal(
        _ text: UnsafeBufferPointer<UInt8>, from start: Int, _ query: UnsafeBufferPointer<UInt8>
    )
        -> Bool
    {
        var offset = 0
        while offset < query.count {
            guard text[start + offset] == query[offset] else { return false }
            offset += 1
        }
        return true
    }
}
