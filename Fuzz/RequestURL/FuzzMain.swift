// libFuzzer entry point for the request URL builder (`HTTPOrigin.requestURL(target:method:)`). Built together
// with Sources/NetworkRetry/HTTPOrigin.swift, HTTPOrigin+RequestURL.swift and WWWAuthenticate*.swift (for
// `asciiLowercased`) only; see ../README.md.
import Foundation

/// The input is `<method byte><authority>\n<target>`: the first byte picks the scheme and method, the authority
/// is read as a request's would be, and the target is the request's path. Checks that the builder never traps,
/// that whatever URL it builds points at exactly the origin the authority names (scheme, host, port, no user
/// info), that it refuses every target `isValidRequestTarget` refuses, and that a target made only of allowed
/// bytes comes back unchanged (nothing is decoded).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let selector = bytes.first else { return 0 }
    let rest = bytes.dropFirst()
    let newline = rest.firstIndex(of: UInt8(ascii: "\n")) ?? rest.endIndex
    let authority = String(decoding: rest[..<newline], as: UTF8.self)
    let target = newline < rest.endIndex ? String(decoding: rest[rest.index(after: newline)...], as: UTF8.self) : ""
    let scheme = selector & 1 == 0 ? "https" : "http"
    let methods = ["GET", "POST", "OPTIONS", "PUT", "DELETE", "HEAD", "PATCH", "CONNECT"]
    let method = methods[Int(selector >> 1) % methods.count]

    _ = HTTPOrigin.isPlainHost(authority)
    _ = HTTPOrigin.percentEncodingStrayBytes(target)
    guard let origin = HTTPOrigin(scheme: scheme, authority: authority) else { return 0 }
    let url = origin.requestURL(target: target, method: method)
    if !HTTPOrigin.isValidRequestTarget(target, method: method) {
        precondition(url == nil, "a target that is not valid was built")
        return 0
    }
    guard let url else { return 0 }
    precondition(HTTPOrigin(url) == origin, "the built URL points at another origin")
    let components = URLComponents(url: url, resolvingAgainstBaseURL: false)
    precondition(components != nil && components?.user == nil && components?.password == nil, "user info")
    precondition(url.absoluteString.hasPrefix(scheme + "://"), "scheme changed")
    if target == "*" {
        precondition(components?.percentEncodedPath == "", "asterisk built a path")
        return 0
    }
    var rebuilt = components?.percentEncodedPath ?? ""
    if let query = components?.percentEncodedQuery { rebuilt += "?" + query }
    precondition(rebuilt == HTTPOrigin.percentEncodingStrayBytes(target), "the path or query changed")
    let plain = target.utf8.allSatisfy { byte in
        byte != UInt8(ascii: "%") && byte > 0x20 && byte < 0x7F && !#"#[]\^`{|}<>""#.utf8.contains(byte)
    }
    if plain { precondition(rebuilt == target, "an allowed target was changed") }
    return 0
}
