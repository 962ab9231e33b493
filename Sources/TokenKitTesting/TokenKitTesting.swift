// Placeholder: mock transport, manual clock and simulated token server arrive with their issues.
internal import AuthToken
