import Foundation

extension JSONEndpointRefreshStrategy: CustomReflectable {
    /// The URL, the request's key and the transport's type; never the API key (`dump(strategy)` shows this).
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "url": url, "apiKey": apiKey == nil ? "nil" : "<redacted>", "refreshTokenKey": refreshTokenKey,
                "transport": String(describing: type(of: transport)),
            ],
            displayStyle: .struct)
    }
}
