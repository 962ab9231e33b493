extension PKCE: CustomReflectable {
    /// The challenge and method; never the verifier (`dump(pkce)` shows this).
    public var customMirror: Mirror {
        Mirror(self, children: ["challenge": challenge, "challengeMethod": challengeMethod], displayStyle: .struct)
    }
}
