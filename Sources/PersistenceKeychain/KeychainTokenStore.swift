// Placeholder: the Persistence issue builds the Keychain store here (Apple platforms only).
internal import Persistence
