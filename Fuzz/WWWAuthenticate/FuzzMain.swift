// libFuzzer entry point for the WWW-Authenticate parser. Built together with the parser's source files only;
// see README.md for the commands.

/// Parses the input, then checks two properties: the parser never traps or hangs, and whatever it accepts
/// survives a round trip (serialised canonically and parsed again, it gives the same challenges).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    guard let challenges = AuthenticationChallenge.parse(text) else { return 0 }
    for challenge in challenges {
        _ = BearerChallenge(challenge)
        for parameter in challenge.parameters { _ = challenge[parameter: parameter.name] }
    }
    _ = BearerChallenge(firstIn: challenges)

    let canonical = challenges.map(serialise).joined(separator: ", ")
    guard canonical.utf8.count <= AuthenticationChallenge.maximumFieldLength else { return 0 }
    guard let reparsed = AuthenticationChallenge.parse(canonical) else {
        fatalError("canonical form of accepted input was rejected: \(canonical.debugDescription)")
    }
    precondition(reparsed == challenges, "round trip changed the challenges: \(canonical.debugDescription)")
    precondition(AuthenticationChallenge.parse(fieldValues: [text, text]) == challenges + challenges)
    return 0
}

private func serialise(_ challenge: AuthenticationChallenge) -> String {
    if let token68 = challenge.token68 { return challenge.scheme + " " + token68 }
    if challenge.parameters.isEmpty { return challenge.scheme }
    let parameters = challenge.parameters.map { parameter in
        var quoted = "\""
        for character in parameter.value.unicodeScalars {
            if character == "\"" || character == "\\" { quoted.unicodeScalars.append("\\") }
            quoted.unicodeScalars.append(character)
        }
        return parameter.name + "=" + quoted + "\""
    }
    return challenge.scheme + " " + parameters.joined(separator: ", ")
}
