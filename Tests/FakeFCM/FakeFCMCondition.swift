/// A `message.condition` as FCM reads it: `'a' in topics`, `&&`, `||`, `!` and parentheses (`!` binds tightest,
/// then `&&`, then `||`), at most five topics, and the registrations it reaches: those whose subscriptions satisfy it.
indirect enum FakeFCMCondition: Sendable, Equatable {
    case topic(String)
    case not(FakeFCMCondition)
    case and(FakeFCMCondition, FakeFCMCondition)
    case or(FakeFCMCondition, FakeFCMCondition)

    /// The most topics FCM takes in one condition.
    static let maximumTopics = 5

    /// Why a condition was refused, in FCM's words as far as the fake knows them.
    struct Problem: Error, Equatable {
        var message: String
    }

    /// Reads `text`; a malformed condition, a topic name FCM refuses, or more than `maximumTopics` topics is a
    /// `Problem` (FCM answers 400 INVALID_ARGUMENT).
    static func parse(_ text: String) -> Result<FakeFCMCondition, Problem> {
        var parser = Parser(tokens: [])
        do {
            parser.tokens = try tokenize(text)
            let condition = try parser.disjunction()
            guard parser.index == parser.tokens.count else { throw Problem(message: "Invalid condition expression.") }
            guard condition.topics.count <= maximumTopics else {
                throw Problem(message: "Invalid condition expression: more than \(maximumTopics) topics.")
            }
            return .success(condition)
        } catch let problem as Problem {
            return .failure(problem)
        } catch {
            return .failure(Problem(message: "Invalid condition expression."))
        }
    }

    /// Every topic the condition names, each once per mention.
    var topics: [String] {
        switch self {
        case .topic(let topic): [topic]
        case .not(let inner): inner.topics
        case .and(let lhs, let rhs), .or(let lhs, let rhs): lhs.topics + rhs.topics
        }
    }

    /// Whether a registration subscribed to `subscribed` satisfies the condition.
    func matches(_ subscribed: Set<String>) -> Bool {
        switch self {
        case .topic(let topic): subscribed.contains(topic)
        case .not(let inner): !inner.matches(subscribed)
        case .and(let lhs, let rhs): lhs.matches(subscribed) && rhs.matches(subscribed)
        case .or(let lhs, let rhs): lhs.matches(subscribed) || rhs.matches(subscribed)
        }
    }

    private enum Token: Equatable {
        case topic(String), inTopics, and, or, not, open, close
    }

    /// Splits `text` into quoted topic names (single or double quotes), `in topics`, operators and parentheses.
    private static func tokenize(_ text: String) throws -> [Token] {
        var tokens: [Token] = []
        var rest = Substring(text)
        while let first = rest.first {
            if first == " " || first == "\t" || first == "\n" { rest = rest.dropFirst(); continue }
            if first == "'" || first == "\"" {
                let body = rest.dropFirst()
                guard let close = body.firstIndex(of: first) else {
                    throw Problem(message: "Invalid condition: unclosed quote.")
                }
                let name = String(body[..<close])
                guard FCMValidation.isTopicName(name) else {
                    throw Problem(message: "Invalid topic name in condition: must match [a-zA-Z0-9-_.~%]{1,900}.")
                }
                tokens.append(.topic(name))
                rest = body[body.index(after: close)...]
            } else if rest.hasPrefix("&&") {
                tokens.append(.and); rest = rest.dropFirst(2)
            } else if rest.hasPrefix("||") {
                tokens.append(.or); rest = rest.dropFirst(2)
            } else if first == "!" {
                tokens.append(.not); rest = rest.dropFirst()
            } else if first == "(" {
                tokens.append(.open); rest = rest.dropFirst()
            } else if first == ")" {
                tokens.append(.close); rest = rest.dropFirst()
            } else if rest.hasPrefix("in") {
                rest = rest.dropFirst(2).drop { $0 == " " || $0 == "\t" }
                guard rest.hasPrefix("topics") else {
                    throw Problem(message: "Invalid condition: expected 'in topics'.")
                }
                tokens.append(.inTopics); rest = rest.dropFirst("topics".count)
            } else {
                throw Problem(message: "Invalid condition expression.")
            }
        }
        return tokens
    }

    /// A recursive-descent reader of the tokens: `||` of `&&` of `!`-prefixed terms.
    private struct Parser {
        var tokens: [Token]
        var index = 0

        mutating func disjunction() throws -> FakeFCMCondition {
            var condition = try conjunction()
            while take(.or) { condition = .or(condition, try conjunction()) }
            return condition
        }

        mutating func conjunction() throws -> FakeFCMCondition {
            var condition = try term()
            while take(.and) { condition = .and(condition, try term()) }
            return condition
        }

        mutating func term() throws -> FakeFCMCondition {
            if take(.not) { return .not(try term()) }
            if take(.open) {
                let inner = try disjunction()
                guard take(.close) else { throw Problem(message: "Invalid condition: unbalanced parentheses.") }
                return inner
            }
            guard index < tokens.count, case .topic(let name) = tokens[index] else {
                throw Problem(message: "Invalid condition expression.")
            }
            index += 1
            guard take(.inTopics) else { throw Problem(message: "Invalid condition: expected 'in topics'.") }
            return .topic(name)
        }

        /// Consumes the next token when it is `token`.
        mutating func take(_ token: Token) -> Bool {
            guard index < tokens.count, tokens[index] == token else { return false }
            index += 1
            return true
        }
    }
}
