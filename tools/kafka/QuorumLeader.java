// Prints the node id of the KRaft quorum's leader (the active controller) of the cluster at
// args[0]. Run by scripts/kafka.sh controller as a single-file program on the broker's own jars
// (java -cp "$LIB/*" QuorumLeader.java BOOTSTRAP): Kafka's metadata answer to clients names no
// controller in KRaft mode, and librdkafka 2.0.2 has no DescribeMetadataQuorum.
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;

public class QuorumLeader {
  public static void main(String[] args) throws Exception {
    Properties p = new Properties();
    p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
    p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
    p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "15000");
    try (Admin admin = Admin.create(p)) {
      System.out.println(admin.describeMetadataQuorum().quorumInfo().get().leaderId());
    }
  }
}
