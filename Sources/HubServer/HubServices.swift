import DAO
import Mongo
import Relay

/// The hub's shared services: the database pool and the data access objects over it.
public struct HubServices: Sendable {
    public let pool: MongoClientPool
    public let database: MongoDatabase
    public let channels: ChannelDAO
    public let areas: AreaDAO
    public let subjects: SubjectDAO
    public let messages: MessageDAO
    public let users: UserDAO
    public let tokens: TokenDAO
    public let credentials: Credentials
    /// The live API tokens in memory (bearer tokens checked without a query).
    public let tokenDirectory: TokenDirectory
    public let outbox: OutboxDAO
    /// The information cube in memory (GET /channel and topic lookups).
    public let cube: CubeCache
    /// Wakes this process's relay workers when a message is stored, so they need not wait for a poll.
    public let outboxSignal: OutboxSignal
    /// How long the relay retries a message before marking it failed, in milliseconds.
    public let relayDeadlineMS: Int64

    /// The services over `database` (the pool's default database unless tests pick another).
    public init(pool: MongoClientPool, database: MongoDatabase? = nil, relayDeadlineMS: Int64 = 6 * 3600 * 1000) {
        // Metrics made by the services below need the backend in place first.
        HubMetrics.bootstrap()
        let database = database ?? pool.database()
        self.pool = pool
        self.database = database
        self.channels = ChannelDAO(database: database)
        self.areas = AreaDAO(database: database)
        self.subjects = SubjectDAO(database: database)
        self.messages = MessageDAO(database: database)
        self.users = UserDAO(database: database)
        self.tokens = TokenDAO(database: database)
        self.tokenDirectory = TokenDirectory(tokens: tokens)
        self.credentials = Credentials(users: users, tokens: tokens, directory: tokenDirectory)
        self.outbox = OutboxDAO(database: database)
        self.cube = CubeCache(channels: channels)
        self.outboxSignal = OutboxSignal()
        self.relayDeadlineMS = relayDeadlineMS
    }
}
