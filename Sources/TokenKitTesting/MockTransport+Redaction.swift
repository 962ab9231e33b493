import HTTPTypes

extension MockTransport: CustomReflectable {
    /// The recorded requests, redacted as in ``description``; never a credential (`dump(transport)` shows this).
    public var customMirror: Mirror {
        Mirror(self, children: ["requests": requests], displayStyle: .class)
    }
}

extension RecordedRequest: CustomReflectable {
    /// The request as ``description`` prints it (credentials `<redacted>`); never a credential or the body's
    /// bytes (`dump(request)` shows this).
    public var customMirror: Mirror {
        Mirror(self, children: ["request": description], displayStyle: .struct)
    }
}

extension SimulatedTokenServer.Configuration: CustomReflectable {
    /// The client ID, the user names and the behaviour; never the client secret, the API key or a password.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "clientID": clientID, "clientSecret": clientSecret == nil ? "nil" : "<redacted>",
                "apiKey": apiKey == nil ? "nil" : "<redacted>", "users": users.keys.sorted(),
                "accessTokenLifetime": accessTokenLifetime, "rotatesRefreshTokens": rotatesRefreshTokens,
                "detectsReuse": detectsReuse, "graceWindow": graceWindow,
            ],
            displayStyle: .struct)
    }
}
