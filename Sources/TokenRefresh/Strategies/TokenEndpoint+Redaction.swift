import HTTPTypes

extension TokenEndpoint: CustomReflectable {
    /// The URL, the client (without its secret), the names of the additional header fields and the transport's
    /// type; never a header value (`dump(endpoint)` shows this).
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "url": url, "client": client, "additionalHeaders": additionalHeaders.map(\.name.rawName),
                "transport": String(describing: type(of: transport)),
            ],
            displayStyle: .struct)
    }
}
