// swift-format-ignore-file
// Not a target: a stand-in for the few UIKit symbols TokenKitSignIn's key-window lookup uses (and the window type
// AuthenticationServices' ASPresentationAnchor names on iOS), for .ci/apple-typecheck on Linux. Signatures as Apple
// documents them, no behaviour; NSObject is approximated by Foundation's.
//   https://developer.apple.com/documentation/uikit/uiapplication/shared
//   https://developer.apple.com/documentation/uikit/uiapplication/connectedscenes   var connectedScenes: Set<UIScene> { get }
//   https://developer.apple.com/documentation/uikit/uiwindowscene/windows            var windows: [UIWindow] { get }
//   https://developer.apple.com/documentation/uikit/uiwindow/iskeywindow             var isKeyWindow: Bool { get }
//   https://developer.apple.com/documentation/uikit/uiwindow                         @MainActor class UIWindow : UIView
@_exported import Foundation

@MainActor open class UIResponder: NSObject { public nonisolated override init() { super.init() } }
@MainActor open class UIView: UIResponder {}
@MainActor open class UIWindow: UIView { open var isKeyWindow: Bool { false } }
@MainActor open class UIScene: UIResponder {}
@MainActor open class UIWindowScene: UIScene { open var windows: [UIWindow] { [] } }
@MainActor open class UIApplication: UIResponder {
    public class var shared: UIApplication { UIApplication() }
    open var connectedScenes: Set<UIScene> { [] }
}
