package kubernetes_test

import (
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
)

func createOther(ctx context.Context, c *kubernetes.Clientset, ns string, obj runtime.Object, opts metav1.CreateOptions) error {
	var err error
	switch o := obj.(type) {
	case *appsv1.Deployment:
		_, err = c.AppsV1().Deployments(ns).Create(ctx, o, opts)
	case *appsv1.StatefulSet:
		_, err = c.AppsV1().StatefulSets(ns).Create(ctx, o, opts)
	case *policyv1.PodDisruptionBudget:
		_, err = c.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, o, opts)
	default:
		err = fmt.Errorf("the test does not know how to create a %T", obj)
	}
	return err
}

// Every manifest of deploy/kubernetes is accepted by the real apiserver:
// rbac.yaml is created for real (newEnv), the rest in a server-side dry
// run, so validation and admission run on them.
func TestManifestsApply(t *testing.T) {
	e := newEnv(t)
	n := 0
	for _, f := range []string{"service.yaml", "shop.yaml", "pdb.yaml"} {
		for _, obj := range decodeFile(t, f) {
			create(t, e.admin, e.ns, obj, true)
			n++
		}
	}
	if n < 6 {
		t.Fatalf("applied %d objects, want the 2 services, 3 deployments and the PDB", n)
	}
}
