package import HTTPTypes

// Apart from HTTPOrigin.swift, which needs Foundation only, so that the fuzz target of the URL builder compiles
// without swift-http-types.
extension HTTPOrigin {
    /// Reads the origin of a request's scheme and authority; `nil` if either is missing or unusable.
    ///
    /// - Parameter request: A request with an absolute URL.
    package init?(_ request: HTTPRequest) {
        guard let scheme = request.scheme, let authority = request.authority else { return nil }
        self.init(scheme: scheme, authority: authority)
    }
}
